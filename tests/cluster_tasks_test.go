package tests

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/internal/cluster"
)

// TestClusterTasks: on two nodes of a real cluster (embedded NATS, links
// between nodes), a 2026-07-28 task that one node started is polled and
// cancelled through the other, which forwards its tasks/* requests to the
// node its id names: on a route with sessions and on a stateless one.
func TestClusterTasks(t *testing.T) {
	t.Parallel()
	e, err := cluster.StartEmbedded("127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	dir := t.TempDir()
	copyDir(t, filepath.Join("..", "scripts", "lib"), filepath.Join(dir, "lib"))
	live, err := os.ReadFile(filepath.Join("..", "scripts", "live.lua"))
	if err != nil {
		t.Fatal(err)
	}
	stateless := strings.Replace(string(live), "route = { sessions = true,", "route = { sessions = false,", 1)
	if stateless == string(live) {
		t.Fatal("live.lua's route line changed: this test makes a stateless copy of it")
	}
	for name, src := range map[string]string{"live.lua": string(live), "live_stateless.lua": stateless} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n1, n2 := startNode(t, e.URL(), "n1", dir), startNode(t, e.URL(), "n2", dir)
	s := &testServer{t: t, client: &http.Client{}}
	tasks := map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	for _, route := range []string{"live", "live_stateless"} {
		t.Run(route, func(t *testing.T) {
			on := func(n *testNode) string { return n.URL + "/mcp/" + route }
			report := func(seconds int) eraTask {
				var created eraTask
				eraResult(t, s.do(t, on(n1), eraCall(1, "tools/call", map[string]any{"name": "report", "arguments": map[string]any{"seconds": seconds}}, tasks)), &created)
				if created.ResultType != "task" || !strings.HasPrefix(created.TaskID, "n1.") {
					t.Fatalf("report on n1 = %+v, want a task whose id names n1", created)
				}
				return created
			}
			get := func(task string) eraTask {
				var got eraTask
				eraResult(t, s.do(t, on(n2), eraCall(2, "tasks/get", map[string]any{"taskId": task}, tasks)), &got)
				return got
			}
			done := report(1)
			got := get(done.TaskID)
			for deadline := time.Now().Add(waitLong); got.Status == "working" && time.Now().Before(deadline); got = get(done.TaskID) {
				time.Sleep(50 * time.Millisecond)
			}
			if got.Status != "completed" || got.Result == nil || len(got.Result.Content) != 1 || got.Result.Content[0].Text != "Report ready after 1 seconds" {
				t.Errorf("the task through n2 at its end = %+v", got)
			}
			long := report(60)
			var ack map[string]any
			eraResult(t, s.do(t, on(n2), eraCall(3, "tasks/cancel", map[string]any{"taskId": long.TaskID}, tasks)), &ack)
			if got := get(long.TaskID); got.Status != "cancelled" {
				t.Errorf("the task cancelled through n2 = %+v", got)
			}
			// n2 held none of it: what it answered came from n1, over a
			// link (a node that falls back to HTTP says so in its log).
			if logs := n2.logs.dump(); strings.Contains(logs, "refused a link") {
				t.Errorf("n1 refused n2's link:\n%s", logs)
			}
		})
	}
}
