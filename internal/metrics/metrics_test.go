package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/internal/cluster"
	"github.com/luamcp/luamcp/mcp"
)

// gather returns the series of every family of m, each written
// `name{label=value,...} value` (a histogram's value is its count).
func gather(t *testing.T, m *Metrics) []string {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fams {
		name := f.GetName()
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue
		}
		for _, s := range f.GetMetric() {
			var l []string
			for _, p := range s.GetLabel() {
				l = append(l, p.GetName()+"="+p.GetValue())
			}
			v := s.GetCounter().GetValue() + s.GetGauge().GetValue() + float64(s.GetHistogram().GetSampleCount())
			out = append(out, name+"{"+strings.Join(l, ",")+"} "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	return out
}

func TestReports(t *testing.T) {
	m := New()
	if got := gather(t, m); len(got) != 0 {
		t.Fatalf("new metrics have series %q", got)
	}
	m.Operation(mcp.Operation{Route: "/mcp/a", Method: "tools/call", Tool: "t", Duration: time.Millisecond})
	m.Operation(mcp.Operation{Route: "/mcp/a", Method: "tools/call", Tool: "t", Duration: 2 * time.Millisecond})
	m.Operation(mcp.Operation{Route: "/mcp/a", Method: "tools/call", Tool: mcp.OtherName, ErrorType: "-32602"})
	m.SessionEnded("/mcp/a", time.Minute)
	m.Refused("/mcp/a", mcp.GateOrigin)
	m.PushesDropped("/mcp/a", mcp.DropEvicted, 3)
	m.Reloaded("/mcp/a", true)
	m.Reloaded("/mcp/a", false)
	m.Reloaded("/mcp/a", false)
	m.Forwarded("/mcp/a", mcp.ForwardedOut)
	m.Forwarded("/mcp/a", mcp.ForwardedOut)
	m.Forwarded("/mcp/a", mcp.ForwardedIn)
	m.SetCluster(func() cluster.Stats {
		return cluster.Stats{PushesSent: 7, PushesReceived: 9, PushesUnsent: 4, Connected: true, Reconnects: 2, LinksOut: 3, LinksIn: 1}
	})
	m.SetStats(func() []host.RouteStats {
		return []host.RouteStats{{Path: "/mcp/a", Sessions: 2, LuaStates: 5, Running: 1, Queued: 4, StatesRecycled: 6, StatesClosed: 3, Tasks: [5]int{2, 1, 5, 0, 1}}}
	})
	m.SetReplay(func() (int64, int64) { return 4096, 1 << 20 })
	want := []string{
		"luamcp_replay_kept_bytes{} 4096",
		"luamcp_replay_budget_bytes{} 1.048576e+06",
		"luamcp_cluster_forwarded_total{direction=in,route=/mcp/a} 1",
		"luamcp_cluster_forwarded_total{direction=out,route=/mcp/a} 2",
		"luamcp_cluster_links{end=in} 1",
		"luamcp_cluster_links{end=out} 3",
		"luamcp_cluster_nats_connected{} 1",
		"luamcp_cluster_nats_reconnects_total{} 2",
		"luamcp_cluster_pushes_total{direction=received} 9",
		"luamcp_cluster_pushes_total{direction=sent} 7",
		"luamcp_cluster_pushes_total{direction=unsent} 4",
		"luamcp_lua_calls_queued{route=/mcp/a} 4",
		"luamcp_lua_calls_running{route=/mcp/a} 1",
		"luamcp_lua_states{route=/mcp/a} 5",
		"luamcp_lua_states_ended_total{outcome=closed,route=/mcp/a} 3",
		"luamcp_lua_states_ended_total{outcome=recycled,route=/mcp/a} 6",
		"luamcp_pushes_dropped_total{reason=evicted,route=/mcp/a} 3",
		"luamcp_refusals_total{gate=origin,route=/mcp/a} 1",
		"luamcp_reloads_total{result=failed,route=/mcp/a} 2",
		"luamcp_reloads_total{result=ok,route=/mcp/a} 1",
		"luamcp_sessions_active{route=/mcp/a} 2",
		"luamcp_tasks{route=/mcp/a,status=working} 2",
		"luamcp_tasks{route=/mcp/a,status=input_required} 1",
		"luamcp_tasks{route=/mcp/a,status=completed} 5",
		"luamcp_tasks{route=/mcp/a,status=failed} 0",
		"luamcp_tasks{route=/mcp/a,status=cancelled} 1",
		"mcp_server_operation_duration_seconds{error_type=,gen_ai_tool_name=t,mcp_method_name=tools/call,route=/mcp/a} 2",
		"mcp_server_operation_duration_seconds{error_type=-32602,gen_ai_tool_name=_OTHER,mcp_method_name=tools/call,route=/mcp/a} 1",
		"mcp_server_session_duration_seconds{route=/mcp/a} 1",
	}
	got := gather(t, m)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestHandlerServesTextFormat(t *testing.T) {
	m := New()
	m.Refused("/mcp/a", mcp.GateAuth)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `luamcp_refusals_total{gate="auth",route="/mcp/a"} 1`) ||
		!strings.Contains(string(body), "go_goroutines") {
		t.Errorf("HTTP %d:\n%s", resp.StatusCode, body)
	}
}

// A label value that is not UTF-8 (a route path or tool name from a script)
// is written with U+FFFD, not a panic.
func TestLabelNotUTF8(t *testing.T) {
	m := New()
	m.Operation(mcp.Operation{Method: "tools/call", Tool: "t\xff", Route: "/mcp/caf\xe9"})
	m.Reloaded("/mcp/caf\xe9", true)
	if _, err := m.Registry().Gather(); err != nil {
		t.Errorf("Gather: %v", err)
	}
}
