package host_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
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
