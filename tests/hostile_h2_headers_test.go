package tests

import (
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
)

// stallStreams opens n streams on c, each a POST to path with pad bytes of
// an extra header, announcing a body of 100 bytes and sending none.
func stallStreams(t testing.TB, c *h2Raw, path string, n, pad int) {
	t.Helper()
	x := strings.Repeat("x", pad)
	for range n {
		if _, err := c.open(http.MethodPost, path, false, "content-type", "application/json",
			"accept", acceptBoth, "mcp-protocol-version", latestVersion, "content-length", "100", "x-pad", x); err != nil {
			t.Fatalf("open: %v", err)
		}
	}
}

// answered counts c's streams answered with status.
func (c *h2Raw) answered(status int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, st := range c.status {
		if st == status {
			n++
		}
	}
	return n
}

// TestHTTP2StalledHeadersRefused: streams that announce a body and send
// none hold their headers until the body timeout, 100 of them per
// connection; those headers count against the body budget, so past it a
// new one gets 503 at once instead of waiting (and holding its headers) for
// 30 s, and what they held is given back when they end.
func TestHTTP2StalledHeadersRefused(t *testing.T) {
	const budget, pad = 2 << 20, 56 << 10
	s := startTLSWith(t, false, serveFront, func(c *host.Config) { c.BodyBudget = budget }, "stateless")
	c := dialH2(t, s, true)
	stallStreams(t, c, "/mcp/stateless", 100, pad)
	// Each costs its headers and 16 KiB (mcp's requestOverhead): 2 MiB
	// holds 28 or 29 of them, and the next is refused at once. The refusal
	// says "Connection: close", as a body past the budget's does: HTTP/2
	// sends a GOAWAY, and the streams the client opened after it are
	// dropped unanswered.
	c.waitFor(5*time.Second*raceSlowdown, "a stream past the budget refused", func() bool { return len(c.status) > 0 })
	time.Sleep(100 * time.Millisecond) // any more answers arrive
	if n, all := c.answered(http.StatusServiceUnavailable), len(c.status); n != all {
		t.Errorf("%d stalled streams answered, %d of them with 503; want all refused", all, n)
	}
	c.mu.Lock()
	if c.goAway == nil {
		t.Error("no GOAWAY after the refusal")
	}
	c.mu.Unlock()
	// Once they have stalled for a second, a client whose body follows its
	// headers is served, as large as theirs: the oldest of them are cut to
	// make room (503 too).
	tr := s.h2Transport()
	t.Cleanup(tr.CloseIdleConnections)
	time.Sleep(time.Second)
	refused := c.answered(http.StatusServiceUnavailable)
	if st := postStatus(t, tr, s.url("stateless"), "X-Pad", strings.Repeat("y", pad)); st != http.StatusOK {
		t.Errorf("a well-behaved request beside the stalled streams: %d", st)
	}
	c.waitFor(waitLong, "a stalled stream cut", func() bool { return len(c.status) > refused })
	if n, all := c.answered(http.StatusServiceUnavailable), len(c.status); n != all {
		t.Errorf("%d stalled streams answered, %d of them with 503; want all refused", all, n)
	}
	// Once the stalled streams are gone, what they held is given back.
	c.conn.Close()
	for deadline := time.Now().Add(waitLong); ; time.Sleep(50 * time.Millisecond) {
		st := postStatus(t, tr, s.url("stateless"))
		if st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a request once the stalled streams are gone: %d", st)
		}
	}
}

// postStatus posts a ping to url through rt, with more header fields (name,
// value, ...), and returns the status.
func postStatus(t *testing.T, rt http.RoundTripper, url string, header ...string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", acceptBoth)
	req.Header.Set("MCP-Protocol-Version", latestVersion)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Transport: rt, Timeout: waitLong}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// BenchmarkHTTP2StalledHeaders measures what streams that announce a body
// and send none make the process hold, and a well-behaved client's latency
// meanwhile (one round, whatever b.N): LUAMCP_MEASURE_CONNS connections
// (50) of 100 such streams with LUAMCP_MEASURE_PAD bytes of headers (56
// KiB), under LUAMCP_MEASURE_BUDGET_MB (the default budget; negative: none,
// as before headers counted). README's TLS section quotes it:
//
//	cd tests && go test -run '^$' -bench HTTP2StalledHeaders -benchtime 1x .
func BenchmarkHTTP2StalledHeaders(b *testing.B) {
	t := b
	env := func(name string, def int) int {
		if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
			return n
		}
		return def
	}
	conns, pad, budgetMB := env("LUAMCP_MEASURE_CONNS", 50), env("LUAMCP_MEASURE_PAD", 56<<10), env("LUAMCP_MEASURE_BUDGET_MB", 0)
	s := startTLSWith(t, false, serveFront, func(c *host.Config) { c.BodyBudget = int64(budgetMB) << 20 }, "stateless")
	tr := s.h2Transport()
	t.Cleanup(tr.CloseIdleConnections)
	stop := make(chan struct{})
	l := probe(t, tr, s.url("stateless"), 20*time.Millisecond, stop)
	time.Sleep(200 * time.Millisecond)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc + ms.StackInuse
	start := time.Now()
	cs := make([]*h2Raw, conns)
	for i := range cs {
		cs[i] = dialH2(t, s, true)
		stallStreams(t, cs[i], "/mcp/stateless", 100, pad)
	}
	time.Sleep(3 * time.Second) // the streams reach their handlers
	runtime.GC()
	runtime.ReadMemStats(&ms)
	held := int64(ms.HeapAlloc+ms.StackInuse) - int64(before)
	refused := 0
	for _, c := range cs {
		refused += c.answered(http.StatusServiceUnavailable)
	}
	time.Sleep(2 * time.Second)
	close(stop)
	n, fails, p50, p99, maxd, last := l.summary()
	b.ReportMetric(float64(held)/(1<<20), "MiB-held")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	t.Logf("%d connections × 100 streams, %d bytes of headers each, budget %d MiB: %d refused (503) in %v; heap and stacks held %.1f MiB (%.1f KiB per waiting stream); the other client: %d pings ok, %d failed (last: %v), p50 %v, p99 %v, max %v",
		conns, pad, budgetMB, refused, time.Since(start), float64(held)/(1<<20), float64(held)/1024/float64(max(1, conns*100-refused)), n, fails, last, p50, p99, maxd)
}
