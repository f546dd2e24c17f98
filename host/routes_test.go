package host

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gorilla/mux"
)

// The exact-path table answers every request as the bare router would: same
// handler, same redirect, same 404/405.
func TestRouteTableMatchesRouter(t *testing.T) {
	paths := []string{"/", "/mcp/echo", "/mcp/echo/", "/a.b/c d"}
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(name)) })
	}
	table := &routeTable{router: mux.NewRouter(), exact: make(map[string]http.Handler)}
	plain := mux.NewRouter()
	for _, p := range paths {
		table.handle(p, named(p))
		plain.Handle(p, named(p))
	}
	for _, target := range []string{
		"/", "/mcp/echo", "/mcp/echo/", "/mcp/echo?x=1", "/mcp//echo", "/mcp/./echo", "/mcp/x/../echo",
		"/mcp/ech%6f", "/a.b/c%20d", "/mcp", "/unknown", "//",
	} {
		t.Run(target, func(t *testing.T) {
			want, got := httptest.NewRecorder(), httptest.NewRecorder()
			plain.ServeHTTP(want, httptest.NewRequest("POST", target, nil))
			table.ServeHTTP(got, httptest.NewRequest("POST", target, nil))
			if got.Code != want.Code || got.Body.String() != want.Body.String() ||
				got.Header().Get("Location") != want.Header().Get("Location") {
				t.Errorf("table: %d %q %q; router: %d %q %q", got.Code, got.Body, got.Header().Get("Location"),
					want.Code, want.Body, want.Header().Get("Location"))
			}
		})
	}
	if len(table.exact) != len(paths) {
		t.Errorf("exact routes: %d, want %d", len(table.exact), len(paths))
	}
}
