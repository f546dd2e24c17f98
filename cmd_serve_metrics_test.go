package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestServeMetrics starts serve with --metrics-addr, opens a session, and
// finds it counted on the metrics listener, which closes with serve.
func TestServeMetrics(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	run := startServe(t, io.Discard, "--dir", dir, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0")
	status := run.lines(t, 2)
	route := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+/mcp/s) `).FindStringSubmatch(status[0])
	scrape := regexp.MustCompile(`^metrics at (http://127\.0\.0\.1:\d+/metrics)$`).FindStringSubmatch(status[1])
	if route == nil || scrape == nil {
		t.Fatalf("status lines %q: want the route, then where the metrics are", status)
	}

	resp := postMCP(t, nil, route[1], "", initializeBody)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: HTTP %d", resp.StatusCode)
	}

	// The transport reports an operation once its answer is written, so the
	// client can read the answer before the count moves: scrape until it
	// does (metrics are not a barrier), for at most 10 s.
	var inits uint64
	var families map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get(scrape[1])
		if err != nil {
			t.Fatal(err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err = parser.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("parsing /metrics: %v", err)
		}
		inits = 0
		if f := families["mcp_server_operation_duration_seconds"]; f != nil {
			for _, m := range f.GetMetric() {
				l := map[string]string{}
				for _, p := range m.GetLabel() {
					l[p.GetName()] = p.GetValue()
				}
				if l["mcp_method_name"] == "initialize" && l["route"] == "/mcp/s" && l["error_type"] == "" {
					inits += m.GetHistogram().GetSampleCount()
				}
			}
		}
		if inits != 0 || time.Now().After(deadline) {
			break
		}
	}
	if inits != 1 {
		t.Errorf("initialize operations on /mcp/s: %d, want 1", inits)
	}
	var active float64 = -1
	if f := families["luamcp_sessions_active"]; f != nil && len(f.GetMetric()) == 1 {
		active = f.GetMetric()[0].GetGauge().GetValue()
	}
	if active != 1 {
		t.Errorf("luamcp_sessions_active = %v, want one series at 1", active)
	}

	run.stop(t)
	if resp, err := http.Get(scrape[1]); err == nil {
		resp.Body.Close()
		t.Error("the metrics listener is still open after serve ended")
	}
}

// TestMetricsConnectionCap: the metrics listener holds at most
// metricsMaxConnections connections; past it a scrape waits for one to
// close, so that a flood of connections to it cannot take the process's
// descriptors.
func TestMetricsConnectionCap(t *testing.T) {
	ms, err := listenMetrics("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ms.close()
	go func() { _ = ms.srv.Serve(ms.ln) }()
	url := "http://" + ms.ln.Addr().String() + "/metrics"
	var idle []net.Conn
	for range metricsMaxConnections {
		c, err := net.Dial("tcp", ms.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n")) // never finished
		idle = append(idle, c)
	}
	scraped := make(chan error, 1)
	go func() {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		scraped <- err
	}()
	select {
	case err := <-scraped:
		t.Fatalf("a scrape past the cap was served at once (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	idle[0].Close()
	select {
	case err := <-scraped:
		if err != nil {
			t.Fatalf("the waiting scrape: %v", err)
		}
	case <-time.After(10 * time.Second): // liveness bound only
		t.Fatal("the waiting scrape was not served once a connection closed")
	}
}
