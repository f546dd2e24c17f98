package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeCluster runs serve --nats embedded: the session ids it mints name
// its node, its metrics show the cluster, and it leaves the cluster cleanly
// when stopped.
func TestServeCluster(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	key := filepath.Join(t.TempDir(), "state.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	outR, outW := io.Pipe()
	var logs syncWriter
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- newApp(outW, &logs).RunContext(ctx, []string{"luamcp", "serve", "--dir", dir, "--addr", "127.0.0.1:0",
			"--log-format", "json", "--state-key-file", key, "--nats", "embedded:0", "--node-id", "node-7", "--metrics-addr", "127.0.0.1:0"})
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	if !lines.Scan() {
		t.Fatalf("serve printed nothing, then ended: %v\n%s", <-done, logs.String())
	}
	route := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+/mcp/s) `).FindStringSubmatch(lines.Text())
	if route == nil {
		t.Fatalf("status line %q does not show the URL", lines.Text())
	}
	if !lines.Scan() {
		t.Fatalf("serve printed no metrics line: %v\n%s", <-done, logs.String())
	}
	scrape := regexp.MustCompile(`^metrics at (http://127\.0\.0\.1:\d+/metrics)$`).FindStringSubmatch(lines.Text())
	if scrape == nil {
		t.Fatalf("line %q does not show the metrics URL", lines.Text())
	}
	go io.Copy(io.Discard, outR)
	req, _ := http.NewRequest(http.MethodPost, route[1], strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(sid, "node-7.") {
		t.Fatalf("initialize: status %d, session %q, want one of node-7", resp.StatusCode, sid)
	}
	mresp, err := http.Get(scrape[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{"luamcp_cluster_nats_connected 1", `luamcp_cluster_pushes_total{direction="sent"} `, "luamcp_cluster_nats_reconnects_total 0"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	if !strings.Contains(logs.String(), "joined the cluster") || !strings.Contains(logs.String(), "embedded NATS") {
		t.Errorf("serve did not log joining the cluster and its embedded NATS:\n%s", logs.String())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}
