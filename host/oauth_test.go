package host_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/host"
)

// TestOAuthMetadataRoutes: each protected route has its metadata document at
// the path-suffixed well-known path; the root form answers only while one
// route is protected, and unprotected routes have none.
func TestOAuthMetadataRoutes(t *testing.T) {
	oauth := func(aud string) string {
		return `{ oauth = { issuer = "https://as.example.com", audience = "` + aud + `" } }`
	}
	tests := []struct {
		name  string
		files map[string]string
		want  map[string]string // path -> resource; "" for 404
	}{
		{"one protected", map[string]string{
			"a.lua": server(oauth("https://m.example.com/mcp/a"), "t"),
			"b.lua": server("{}", "t"),
		}, map[string]string{
			"/.well-known/oauth-protected-resource/mcp/a": "https://m.example.com/mcp/a",
			"/.well-known/oauth-protected-resource":       "https://m.example.com/mcp/a",
			"/.well-known/oauth-protected-resource/mcp/b": "",
		}},
		{"two protected", map[string]string{
			"a.lua": server(oauth("https://m.example.com/mcp/a"), "t"),
			"b.lua": server(oauth("https://m.example.com/mcp/b"), "t"),
		}, map[string]string{
			"/.well-known/oauth-protected-resource/mcp/a": "https://m.example.com/mcp/a",
			"/.well-known/oauth-protected-resource/mcp/b": "https://m.example.com/mcp/b",
			"/.well-known/oauth-protected-resource":       "",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, logs := newHost(t, writeDir(t, tt.files))
			if errs := h.LoadErrors(); len(errs) > 0 {
				t.Fatalf("load errors %v\n%s", errs, logs)
			}
			srv := httptest.NewServer(h.Handler())
			defer srv.Close()
			for path, resource := range tt.want {
				res, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				var doc struct{ Resource string }
				_ = json.NewDecoder(res.Body).Decode(&doc)
				res.Body.Close()
				if resource == "" {
					if res.StatusCode != http.StatusNotFound {
						t.Errorf("GET %s: HTTP %d, want 404", path, res.StatusCode)
					}
					continue
				}
				if res.StatusCode != http.StatusOK || doc.Resource != resource {
					t.Errorf("GET %s: HTTP %d, resource %q; want 200, %q", path, res.StatusCode, doc.Resource, resource)
				}
			}
			if rs := h.Routes(); rs[0].Issuer != "https://as.example.com" || (rs[1].Issuer != "") != (tt.name == "two protected") {
				t.Errorf("Routes() issuers: %q, %q", rs[0].Issuer, rs[1].Issuer)
			}
			// The protected route itself wants a token.
			res, err := http.Post(srv.URL+"/mcp/a", "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("POST /mcp/a without a token: HTTP %d, WWW-Authenticate %q", res.StatusCode, res.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

// TestOAuthMetadataPathsReserved: no script may take a path of the metadata
// documents (the root form, or one under it): the document would silently
// take the route's place. The protected route beside it is served.
func TestOAuthMetadataPathsReserved(t *testing.T) {
	for _, path := range []string{
		"/.well-known/oauth-protected-resource/mcp/a",
		"/.well-known/oauth-protected-resource",
		"/.well-known/oauth-protected-resource/",
		"/.well-known//oauth-protected-resource/x",
	} {
		t.Run(path, func(t *testing.T) {
			h, logs := newHost(t, writeDir(t, map[string]string{
				"a.lua": server(`{ oauth = { issuer = "https://as.example.com", audience = "https://m.example.com/mcp/a" } }`, "t"),
				"b.lua": server(`{ path = "`+path+`" }`, "t"),
			}))
			if errs := h.LoadErrors(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "taken by the OAuth metadata documents") {
				t.Errorf("load errors %v, want b.lua refused\n%s", errs, logs)
			}
			if rs := h.Routes(); len(rs) != 1 || rs[0].Path != "/mcp/a" {
				t.Errorf("routes %+v, want /mcp/a only", rs)
			}
		})
	}
	if err := host.CheckPath("/.well-known/oauth-protected-resources"); err != nil {
		t.Errorf("a path that only starts like the prefix: %v", err)
	}
}
