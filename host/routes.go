package host

import (
	"net/http"
	"path"

	"github.com/gorilla/mux"
)

// A routeTable is the set of routes a Host serves at one moment: the
// gorilla/mux router, and beside it the same routes by exact path.
//
// Every route is a literal path (checkPath), so a request whose path is one
// of them, written in its clean form, is the one the router would pick; the
// table hands it over directly. The router copies each request twice into
// new contexts (its route and its variables, which no handler here reads)
// and matches regular expressions: a quarter of the transport's own
// allocations on a tools/call. Every other request (unclean paths, which
// mux redirects, unknown ones, its 404 and 405) goes through the router.
type routeTable struct {
	router *mux.Router
	exact  map[string]http.Handler // clean literal path -> its handler
}

// handle adds a route for the literal path p.
func (t *routeTable) handle(p string, hd http.Handler) {
	t.router.Handle(p, hd)
	if cleanPath(p) == p {
		t.exact[p] = hd
	}
}

func (t *routeTable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A path sent percent-encoded (RawPath set) goes the router's way: the
	// table then never has to decide what mux would make of it.
	if hd, ok := t.exact[r.URL.Path]; ok && r.URL.RawPath == "" {
		hd.ServeHTTP(w, r)
		return
	}
	t.router.ServeHTTP(w, r)
}

// cleanPath is the form gorilla/mux redirects a path to: path.Clean, keeping
// a trailing slash.
func cleanPath(p string) string {
	c := path.Clean(p)
	if p[len(p)-1] == '/' && c != "/" {
		c += "/"
	}
	return c
}
