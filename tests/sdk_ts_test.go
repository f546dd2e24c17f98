package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The official TypeScript SDK client, run by node/client.mjs with the node 22
// binary that `npm ci` installs in tests/node.

// nodeBin returns the node 22 binary of tests/node. Its absence fails the
// test: the end-to-end suite never skips.
func nodeBin(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("node", "node_modules", "node", "bin", "node"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("node 22 is not installed at %s (%v).\n"+
			"Run `make test` at the repository root, or `npm ci` in tests/node, to install it with the SDK and the conformance suite.", bin, err)
	}
	return bin
}

// runNode runs node with args in tests/node and returns its stdout lines,
// failing the test when node exits non-zero or runs past timeout.
func runNode(t *testing.T, timeout time.Duration, args ...string) []string {
	t.Helper()
	return runNodeEnv(t, timeout, nil, args...)
}

// runNodeEnv is runNode with env (KEY=value) added to node's environment.
func runNodeEnv(t *testing.T, timeout time.Duration, env []string, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin(t), args...)
	cmd.Dir = "node"
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if stdout.Len() > 0 {
		t.Logf("node %s stdout:\n%s", strings.Join(args, " "), stdout.String())
	}
	if stderr.Len() > 0 {
		t.Logf("node %s stderr:\n%s", strings.Join(args, " "), stderr.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("node %s ran past %v", strings.Join(args, " "), timeout)
	}
	if err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var lines []string
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// tsScenario runs one scenario of client.mjs and returns its observations,
// requiring the closing {"done": true}.
func tsScenario(t *testing.T, scenario, url string) []map[string]any {
	t.Helper()
	return tsRun(t, "client.mjs", scenario, url)
}

// tsRun runs one scenario of a node script of node/ (with more arguments
// after the url, if any) and returns its observations, requiring the
// closing {"done": true}.
func tsRun(t *testing.T, script, scenario, url string, more ...string) []map[string]any {
	t.Helper()
	return tsRunEnv(t, nil, script, scenario, url, more...)
}

// tsRunEnv is tsRun with env added to node's environment.
func tsRunEnv(t *testing.T, env []string, script, scenario, url string, more ...string) []map[string]any {
	t.Helper()
	lines := runNodeEnv(t, 60*time.Second, env, append([]string{script, scenario, url}, more...)...)
	var out []map[string]any
	done := false
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			continue // the SDK's own console output
		}
		if m["done"] == true {
			done = true
		}
		out = append(out, m)
	}
	if !done {
		t.Fatalf("%s %s exited 0 without finishing", script, scenario)
	}
	return out
}

func observation(obs []map[string]any, check string) map[string]any {
	for _, o := range obs {
		if o["ok"] == check {
			return o
		}
	}
	return nil
}

func TestTSSDKBasics(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	obs := tsScenario(t, "basics", s.url("session"))
	c := observation(obs, "connect")
	if c == nil || c["protocolVersion"] != latestVersion {
		t.Errorf("connect observation %v, want protocol %s", c, latestVersion)
	}
}

func TestTSSDKStateless(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless")
	tsScenario(t, "stateless", s.url("stateless"))
}

func TestTSSDKNotifications(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	tsScenario(t, "notifications", s.url("session"))
}

func TestTSSDKRequests(t *testing.T) {
	t.Parallel()
	s := startServer(t, "stateless", "session")
	for _, variant := range []string{"session", "stateless"} {
		t.Run(variant, func(t *testing.T) {
			tsScenario(t, "requests", s.url(variant))
			tsScenario(t, "nocapability", s.url(variant))
		})
	}
}

// TestTSSDKTasks: the 2025-11-25 experimental tasks through the SDK's own
// client (client.experimental.tasks: callToolStream, listTasks, getTask,
// cancelTask) against live.lua's report tool, in a session; and a task that
// asks the user (conformance.lua's confirm_delete).
func TestTSSDKTasks(t *testing.T) {
	t.Parallel()
	s := startScripts(t, "live")
	obs := tsRun(t, "client.mjs", "tasks", s.url("live"))
	for _, check := range []string{"tasks capability", "callToolStream", "listTasks", "cancelTask", "not a task"} {
		if observation(obs, check) == nil {
			t.Errorf("no %q check in %v", check, obs)
		}
	}
	// A task that asks the user, on its session's GET channel.
	c := startConformance(t)
	obs = tsRun(t, "client.mjs", "taskask", c.srv.URL+"/mcp")
	for _, check := range []string{"elicitation inside a task", "status notifications"} {
		if observation(obs, check) == nil {
			t.Errorf("no %q check in %v", check, obs)
		}
	}
}

func TestTSSDKTerminate(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	obs := tsScenario(t, "terminate", s.url("session"))
	o := observation(obs, "terminateSession")
	if o == nil {
		t.Fatalf("no terminateSession observation")
	}
	sid, _ := o["sessionId"].(string)
	s.logs.waitFor(t, terminated("normal", sid), 1)
	if r := s.do(t, s.url("session"), call{Body: request(1, "ping", nil), Session: sid}); r.Status != http.StatusNotFound {
		t.Errorf("the terminated session answers HTTP %d, want 404", r.Status)
	}
}

func TestTSSDKReconnect(t *testing.T) {
	t.Parallel()
	s := startServer(t, "session")
	tsScenario(t, "reconnect", s.url("session"))
}

// TestTSClientV2Sessions runs client.mjs's 2025-11-25 scenarios with the
// official v2 client (@modelcontextprotocol/client) in its default mode,
// which keeps the sessions era: the same checks as the SDK v1's above
// (tools across pages, errors, progress, notifications on the GET channel,
// elicitation, sampling and roots, DELETE, resumption after a dropped
// stream), and a result whose structured content the client validates. The
// era tests (era_ts_test.go) run the same client in 2026-07-28.
func TestTSClientV2Sessions(t *testing.T) {
	t.Parallel()
	v2 := []string{"MCP_CLIENT=v2"}
	s := startServer(t, "stateless", "session")
	for _, tc := range []struct{ scenario, variant string }{
		{"basics", "session"},
		{"stateless", "stateless"},
		{"notifications", "session"},
		{"requests", "session"},
		{"requests", "stateless"},
		{"nocapability", "session"},
		{"terminate", "session"},
		{"reconnect", "session"},
	} {
		t.Run(tc.scenario+"/"+tc.variant, func(t *testing.T) {
			obs := tsRunEnv(t, v2, "client.mjs", tc.scenario, s.url(tc.variant))
			if len(obs) < 2 {
				t.Errorf("%s passed no check: %v", tc.scenario, obs)
			}
		})
	}
	t.Run("structured", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "search.lua"), []byte(structuredScript), 0o644); err != nil {
			t.Fatal(err)
		}
		h := startHost(t, dir)
		tsRunEnv(t, v2, "client.mjs", "structured", h.url("search"))
	})
}
