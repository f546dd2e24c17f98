package luavm

import (
	"reflect"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/mcp"
	lua "github.com/yuin/gopher-lua"
)

func TestParseOAuth(t *testing.T) {
	const base = `issuer = "https://as.example.com", audience = "https://mcp.example.com/mcp/notes"`
	tests := []struct {
		name, src string
		want      *mcp.OAuth // nil: an error containing wantErr
		wantErr   string
	}{
		{"minimal", `{` + base + `}`,
			&mcp.OAuth{Issuer: "https://as.example.com", Audience: "https://mcp.example.com/mcp/notes"}, ""},
		{"everything", `{` + base + `, jwks_url = "https://as.example.com/jwks", algorithms = { "RS256", "ES256" },
			scopes = { "notes:read" }, tool_scopes = { add_note = { "notes:write", "audit" } } }`,
			&mcp.OAuth{Issuer: "https://as.example.com", Audience: "https://mcp.example.com/mcp/notes",
				JWKSURL: "https://as.example.com/jwks", Algorithms: []string{"RS256", "ES256"}, Scopes: []string{"notes:read"},
				ToolScopes: map[string][]string{"add_note": {"notes:write", "audit"}}}, ""},
		{"http on loopback", `{ issuer = "http://127.0.0.1:9000", audience = "http://localhost:8750/mcp/x" }`,
			&mcp.OAuth{Issuer: "http://127.0.0.1:9000", Audience: "http://localhost:8750/mcp/x"}, ""},
		{"not a table", `"https://as.example.com"`, nil, "route.oauth must be a table"},
		{"no issuer", `{ audience = "https://mcp.example.com/x" }`, nil, "route.oauth.issuer is required"},
		{"no audience", `{ issuer = "https://as.example.com" }`, nil, "route.oauth.audience is required"},
		{"http elsewhere", `{ issuer = "http://as.example.com", audience = "https://m.example.com/x" }`, nil, "route.oauth.issuer \"http://as.example.com\" must use https"},
		{"relative url", `{ issuer = "as.example.com", audience = "https://m.example.com/x" }`, nil, "route.oauth.issuer \"as.example.com\" must be an absolute https URL"},
		{"url with query", `{ issuer = "https://as.example.com", audience = "https://m.example.com/x?a=1" }`, nil, "route.oauth.audience"},
		{"unknown field", `{` + base + `, jwks = "x" }`, nil, `route.oauth has an unknown field "jwks"`},
		{"alg none", `{` + base + `, algorithms = { "none" } }`, nil, `route.oauth.algorithms[1] "none" is not an asymmetric JWS algorithm`},
		{"alg HS256", `{` + base + `, algorithms = { "RS256", "HS256" } }`, nil, `route.oauth.algorithms[2] "HS256"`},
		{"no algorithms", `{` + base + `, algorithms = {} }`, nil, "at least one algorithm"},
		{"scope with a space", `{` + base + `, scopes = { "a b" } }`, nil, `route.oauth.scopes[1] "a b" is not a scope token`},
		{"scopes not a list", `{` + base + `, scopes = "a" }`, nil, "route.oauth.scopes must be a list of strings"},
		{"tool_scopes not a table", `{` + base + `, tool_scopes = { "a" } }`, nil, "route.oauth.tool_scopes has a key that is not a tool name"},
		{"tool_scopes bad name", `{` + base + `, tool_scopes = { ["a b"] = { "x" } } }`, nil, `route.oauth.tool_scopes has a key "a b" that is not a tool name`},
		{"tool_scopes bad scope", `{` + base + `, tool_scopes = { t = { 1 } } }`, nil, "route.oauth.tool_scopes.t[1] must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L := lua.NewState()
			defer L.Close()
			if err := L.DoString("return " + tt.src); err != nil {
				t.Fatal(err)
			}
			got, err := parseOAuth(L.Get(-1))
			if tt.want == nil {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestOAuthRouteOption checks that the option reaches the route's options.
func TestOAuthRouteOption(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	if err := L.DoString(`return { oauth = { issuer = "https://as.example.com", audience = "https://m.example.com/mcp/x", scopes = { "r" } } }`); err != nil {
		t.Fatal(err)
	}
	o, err := parseRoute(L.Get(-1), "x")
	if err != nil {
		t.Fatal(err)
	}
	if o.OAuth == nil || o.OAuth.Issuer != "https://as.example.com" || !reflect.DeepEqual(o.OAuth.Scopes, []string{"r"}) {
		t.Errorf("Options.OAuth = %+v", o.OAuth)
	}
}
