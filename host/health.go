package host

import (
	"fmt"
	"net/http"
)

// The probes of load balancers and orchestrators (a Kubernetes liveness and
// readiness probe, HAProxy's httpchk) are answered on every host's handler,
// before the routes, at two paths no script may take ([checkPath]). They
// tell nothing but whether the host serves, so they pass no gate: a probe
// comes from the node, not from loopback, and carries no Origin.
const (
	// HealthPath answers 200 while the process serves HTTP: liveness.
	HealthPath = "/healthz"
	// ReadyPath answers 200 while at least one script is mounted and the
	// host is neither draining ([Host.Drain]) nor shutting down, else 503:
	// readiness (whether to send it traffic).
	ReadyPath = "/readyz"
)

// serveProbe answers a probe at path.
func (h *Host) serveProbe(w http.ResponseWriter, r *http.Request, path string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if path == HealthPath {
		fmt.Fprintln(w, "ok")
		return
	}
	h.mu.Lock()
	closed, draining, mounted := h.closed, h.draining, len(h.mounts)
	h.mu.Unlock()
	switch {
	case closed:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not ready: shutting down")
	case draining:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not ready: draining")
	case mounted == 0:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not ready: no server mounted")
	default:
		fmt.Fprintln(w, "ready")
	}
}

// Drain makes [ReadyPath] answer 503 from now on while everything else is
// served as before: a load balancer stops sending new traffic before the
// process stops (serve --drain). It cannot be undone.
func (h *Host) Drain() {
	h.mu.Lock()
	h.draining = true
	h.mu.Unlock()
}
