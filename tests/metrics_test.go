package tests

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/internal/metrics"
	"github.com/luamcp/luamcp/mcp"
)

// metricsScript is a session route whose tools cover every outcome an
// operation can have, and whose pushes overflow a replay buffer of 2.
const metricsScript = `local mcp = require("mcp")
return {
  route = { sessions = true, session_buffer_max = 2 },
  init = function(params) return { name = "m", version = "1" }, { tools = {} }, {} end,
  tools = function(state)
    local tools = {}
    for _, name in ipairs({ "echo", "fail", "crash", "push", "spin" }) do
      tools[#tools + 1] = { name = name, description = name, input_schema = { type = "object" } }
    end
    return tools
  end,
  handle_tool = function(name, args, ctx, state)
    if name == "fail" then return nil, "failed in-band" end
    if name == "crash" then error("boom") end
    if name == "spin" then while true do end end -- until cancelled
    if name == "push" then
      for i = 1, 5 do mcp.notify(ctx.session_id, "notifications/message", { level = "info", data = i }) end
      mcp.notify("no-such-session", "notifications/message", { level = "info", data = 0 })
    end
    return name
  end,
}
`

// statelessMetricsScript is a stateless route with one tool.
const statelessMetricsScript = `return {
  init = function(params) return { name = "st", version = "1" }, { tools = {} }, nil end,
  tools = function() return { { name = "add", description = "add", input_schema = { type = "object" } } } end,
  handle_tool = function(name, args) return tostring((args.a or 0) + (args.b or 0)) end,
}
`

// TestMetrics runs a scripted workload on two routes (both eras, every
// outcome of a call, a session ended and one live, refusals, pushes lost,
// hot reloads that pass and fail), then scrapes /metrics over HTTP, parses
// it with expfmt and checks that every count is what was done.
func TestMetrics(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("m.lua", metricsScript)
	write("st.lua", statelessMetricsScript)
	m := metrics.New()
	s := startHost(t, dir, func(c *host.Config) {
		c.Observer = m
		c.Watch = true
		c.Debounce = 20 * time.Millisecond
	})
	m.SetStats(s.host.Stats)
	m.SetReplay(s.host.Replay)
	scrape := httptest.NewServer(m.Handler())
	t.Cleanup(scrape.Close)
	sessionURL, statelessURL := s.url("m"), s.url("st")

	// Two sessions; the first runs every kind of call, then ends.
	sid := s.initialize(t, sessionURL)
	live := s.initialize(t, sessionURL)
	for range 3 {
		s.callTool(t, sessionURL, sid, "echo", nil).wantText(t, "echo")
	}
	if r := s.callTool(t, sessionURL, sid, "fail", nil); r.IsError == nil || !*r.IsError {
		t.Fatalf("fail: isError = %s, want true", fmtBool(r.IsError))
	}
	wantError(t, s.rpc(t, sessionURL, sid, 1, "tools/call", map[string]any{"name": "crash"}), -32603, "Internal error")
	if m := s.rpc(t, sessionURL, sid, 1, "tools/call", map[string]any{"name": "nope"}); m.Error == nil || m.Error.Code != -32602 {
		t.Fatalf("unknown tool: %+v, want error -32602", m)
	}
	s.callTool(t, sessionURL, sid, "push", nil).wantText(t, "push")
	// The session keeps the two newest pushes (session_buffer_max) for a GET
	// it never opens; its end gives them back (below).
	replayGauge := func(families map[string]*dto.MetricFamily, name string) float64 {
		g := family(t, families, name, dto.MetricType_GAUGE)
		if len(g) != 1 {
			t.Fatalf("%s: %d series, want 1", name, len(g))
		}
		return g[0].GetGauge().GetValue()
	}
	if kept := replayGauge(scrapeMetrics(t, scrape.URL), "luamcp_replay_kept_bytes"); kept < 2*float64(len(`data: {"jsonrpc":"2.0","method":"notifications/message"}`)) {
		t.Errorf("luamcp_replay_kept_bytes = %v with two pushes kept", kept)
	}
	s.result(t, sessionURL, sid, "tools/list", nil, nil)
	if r := s.do(t, sessionURL, call{Method: http.MethodDelete, Session: sid}); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE: HTTP %d, want 204", r.Status)
	}
	// The 2026-07-28 era on the same route, and a stateless route.
	var res toolResult
	eraResult(t, s.do(t, sessionURL, eraCall(1, "tools/call", map[string]any{"name": "echo"}, nil)), &res)
	for range 2 {
		s.callTool(t, statelessURL, "", "add", map[string]any{"a": 2, "b": 3}).wantText(t, "5")
	}
	// A call that spins holds a Lua slot until the client cancels it.
	spin := s.async(t, sessionURL, call{Body: request(9, "tools/call", map[string]any{"name": "spin"}), Session: live})
	waitMetric(t, scrape.URL, "luamcp_lua_calls_running", map[string]string{"route": "/mcp/m"}, 1)
	if r := s.do(t, sessionURL, call{Body: request(nil, "notifications/cancelled", map[string]any{"requestId": 9}), Session: live}); r.Status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: HTTP %d", r.Status)
	}
	wantError(t, spin.wait(t).response(t), -32603, "Request cancelled")
	// Refused at the Origin gate, twice.
	for range 2 {
		r := s.do(t, sessionURL, call{Body: request(1, "tools/list", nil), Session: live,
			Header: map[string]string{"Origin": "http://evil.example"}})
		if r.Status != http.StatusForbidden {
			t.Fatalf("foreign Origin: HTTP %d, want 403", r.Status)
		}
	}
	// A reload that works, then one that fails (the running version stays).
	write("m.lua", strings.Replace(metricsScript, `version = "1"`, `version = "2"`, 1))
	waitMetric(t, scrape.URL, "luamcp_reloads_total", map[string]string{"route": "/mcp/m", "result": "ok"}, 1)
	write("m.lua", "return {\n  oops(\n")
	waitMetric(t, scrape.URL, "luamcp_reloads_total", map[string]string{"route": "/mcp/m", "result": "failed"}, 1)

	families := scrapeMetrics(t, scrape.URL)

	type op struct{ method, tool, errType, route string }
	wantOps := map[op]uint64{
		{"initialize", "", "", "/mcp/m"}:               2,
		{"tools/call", "echo", "", "/mcp/m"}:           4, // 3 in the session, 1 in the 2026-07-28 era
		{"tools/call", "fail", "tool_error", "/mcp/m"}: 1,
		{"tools/call", "crash", "-32603", "/mcp/m"}:    1,
		{"tools/call", "_OTHER", "-32602", "/mcp/m"}:   1, // the name the client made up is no label
		{"tools/call", "push", "", "/mcp/m"}:           1,
		{"tools/call", "spin", "cancelled", "/mcp/m"}:  1,
		{"tools/list", "", "", "/mcp/m"}:               1,
		{"tools/call", "add", "", "/mcp/st"}:           2,
	}
	gotOps := map[op]uint64{}
	for _, mt := range family(t, families, "mcp_server_operation_duration_seconds", dto.MetricType_HISTOGRAM) {
		l := labels(mt)
		k := op{l["mcp_method_name"], l["gen_ai_tool_name"], l["error_type"], l["route"]}
		h := mt.GetHistogram()
		gotOps[k] = h.GetSampleCount()
		if h.GetSampleSum() <= 0 {
			t.Errorf("operation %+v: sum of durations %v, want > 0", k, h.GetSampleSum())
		}
		var bounds []float64
		for _, b := range h.GetBucket() {
			if !math.IsInf(b.GetUpperBound(), +1) {
				bounds = append(bounds, b.GetUpperBound())
			}
		}
		if !slices.Equal(bounds, metrics.DurationBuckets) {
			t.Errorf("operation %+v: bucket bounds %v, want %v", k, bounds, metrics.DurationBuckets)
		}
	}
	for k, n := range wantOps {
		if gotOps[k] != n {
			t.Errorf("operations %+v: count %d, want %d", k, gotOps[k], n)
		}
	}
	for k, n := range gotOps {
		if _, ok := wantOps[k]; !ok {
			t.Errorf("operations %+v: count %d, want no such series", k, n)
		}
	}

	sessions := family(t, families, "mcp_server_session_duration_seconds", dto.MetricType_HISTOGRAM)
	if len(sessions) != 1 || labels(sessions[0])["route"] != "/mcp/m" || sessions[0].GetHistogram().GetSampleCount() != 1 {
		t.Errorf("session durations: %v, want one session ended on /mcp/m", sessions)
	}
	wantCounters(t, families, "luamcp_refusals_total", map[string]float64{"/mcp/m origin": 2}, "route", "gate")
	wantCounters(t, families, "luamcp_pushes_dropped_total",
		map[string]float64{"/mcp/m evicted": 3, "/mcp/m no_session": 1}, "route", "reason")
	wantCounters(t, families, "luamcp_reloads_total",
		map[string]float64{"/mcp/m ok": 1, "/mcp/m failed": 1}, "route", "result")

	// Gauges: nothing kept once the session pushed to ended, under the
	// default budget; the live session, and no Lua call left running or
	// waiting.
	if kept, budget := replayGauge(families, "luamcp_replay_kept_bytes"), replayGauge(families, "luamcp_replay_budget_bytes"); kept != 0 || budget != mcp.DefaultReplayBudget {
		t.Errorf("replay gauges: %v bytes kept of a budget of %v, want 0 of %d", kept, budget, mcp.DefaultReplayBudget)
	}
	wantCounters(t, families, "luamcp_sessions_active", map[string]float64{"/mcp/m": 1, "/mcp/st": 0}, "route")
	wantCounters(t, families, "luamcp_lua_calls_running", map[string]float64{"/mcp/m": 0, "/mcp/st": 0}, "route")
	wantCounters(t, families, "luamcp_lua_calls_queued", map[string]float64{"/mcp/m": 0, "/mcp/st": 0}, "route")
	wantCounters(t, families, "luamcp_tasks", map[string]float64{
		"/mcp/m working": 0, "/mcp/m input_required": 0, "/mcp/m completed": 0, "/mcp/m failed": 0, "/mcp/m cancelled": 0,
		"/mcp/st working": 0, "/mcp/st input_required": 0, "/mcp/st completed": 0, "/mcp/st failed": 0, "/mcp/st cancelled": 0,
	}, "route", "status")
	for _, mt := range family(t, families, "luamcp_lua_states", dto.MetricType_GAUGE) {
		if labels(mt)["route"] == "/mcp/m" && mt.GetGauge().GetValue() < 1 {
			t.Errorf("luamcp_lua_states{route=/mcp/m} = %v, want >= 1: a live session owns a Lua state", mt.GetGauge().GetValue())
		}
	}
	// The session that ended gave its Lua state back or closed it.
	ended := 0.0
	for _, mt := range family(t, families, "luamcp_lua_states_ended_total", dto.MetricType_COUNTER) {
		if l := labels(mt); l["route"] == "/mcp/m" && (l["outcome"] == "recycled" || l["outcome"] == "closed") {
			ended += mt.GetCounter().GetValue()
		}
	}
	if ended < 1 {
		t.Errorf("luamcp_lua_states_ended_total{route=/mcp/m} sums to %v, want >= 1: a session ended", ended)
	}
	if _, ok := families["go_goroutines"]; !ok {
		t.Error("the Go runtime's metrics are missing")
	}
}

// scrapeMetrics GETs /metrics as Prometheus does and parses the text format.
func scrapeMetrics(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: HTTP %d, %v\n%s", resp.StatusCode, err, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return families
}

// family returns the metrics of a family, checking its type.
func family(t *testing.T, families map[string]*dto.MetricFamily, name string, typ dto.MetricType) []*dto.Metric {
	t.Helper()
	f := families[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
	if f.GetType() != typ {
		t.Fatalf("%s is a %v, want a %v", name, f.GetType(), typ)
	}
	return f.GetMetric()
}

func labels(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// wantCounters checks every series of a counter or gauge family: want maps
// the values of the labels named by keys, joined by spaces, to the value.
func wantCounters(t *testing.T, families map[string]*dto.MetricFamily, name string, want map[string]float64, keys ...string) {
	t.Helper()
	f := families[name]
	if f == nil {
		t.Errorf("no metric %s", name)
		return
	}
	got := map[string]float64{}
	for _, m := range f.GetMetric() {
		l := labels(m)
		var vals []string
		for _, k := range keys {
			vals = append(vals, l[k])
		}
		v := m.GetCounter().GetValue()
		if f.GetType() == dto.MetricType_GAUGE {
			v = m.GetGauge().GetValue()
		}
		got[strings.Join(vals, " ")] = v
	}
	for _, k := range slices.Sorted(mapKeys(want, got)) {
		if got[k] != want[k] {
			t.Errorf("%s{%s = %s} = %v, want %v", name, strings.Join(keys, ","), k, got[k], want[k])
		}
	}
}

func mapKeys(ms ...map[string]float64) func(func(string) bool) {
	return func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, m := range ms {
			for k := range m {
				if !seen[k] {
					seen[k] = true
					if !yield(k) {
						return
					}
				}
			}
		}
	}
}

// waitMetric scrapes until the counter or gauge with exactly these labels
// reaches want (a hot reload lands in the background, a call starts in
// another goroutine), failing after waitLong.
func waitMetric(t *testing.T, base, name string, match map[string]string, want float64) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	var last string
	for time.Now().Before(deadline) {
		if f := scrapeMetrics(t, base)[name]; f != nil {
			for _, m := range f.GetMetric() {
				l := labels(m)
				ok := len(l) == len(match)
				for k, v := range match {
					ok = ok && l[k] == v
				}
				v := m.GetCounter().GetValue()
				if f.GetType() == dto.MetricType_GAUGE {
					v = m.GetGauge().GetValue()
				}
				if ok && v >= want {
					return
				}
				last = fmt.Sprint(l, v)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s%v did not reach %v within %v (last seen: %s)", name, match, want, waitLong, last)
}
