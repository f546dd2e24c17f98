package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/luamcp/luamcp/internal/cluster"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

// TestServeCluster runs serve --nats embedded: the session ids it mints name
// its node, its metrics show the cluster, and it leaves the cluster cleanly
// when stopped.
func TestServeCluster(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	key := stateKeyFile(t)
	outR, outW := io.Pipe()
	var logs syncbuf.Buffer
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
	resp := postMCP(t, nil, route[1], "", initializeBody)
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

// stateKeyFile writes a state key every node of a test cluster shares.
func stateKeyFile(t *testing.T) string {
	t.Helper()
	key := filepath.Join(t.TempDir(), "state.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return key
}

// TestServeClusterTLS: nodes that serve HTTPS with a certificate of a private
// authority advertise https:// addresses and forward to each other over TLS
// when given that authority with --cluster-ca; a node without it refuses the
// owner's certificate, and the request it cannot forward gets 404.
func TestServeClusterTLS(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	key := stateKeyFile(t)
	nats, err := cluster.StartEmbedded("127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer nats.Shutdown()
	cert, certKey := selfSigned(t) // its own authority
	node := func(id string, extra ...string) (string, *serveRun) {
		args := append([]string{"--dir", dir, "--addr", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", certKey,
			"--state-key-file", key, "--nats", nats.URL(), "--node-id", id}, extra...)
		run := startServe(t, io.Discard, args...)
		status := run.lines(t, 1)[0]
		route := regexp.MustCompile(`^(https://127\.0\.0\.1:\d+/mcp/s) `).FindStringSubmatch(status)
		if route == nil {
			t.Fatalf("status line %q does not show an https URL", status)
		}
		return route[1], run
	}
	ownerURL, owner := node("owner", "--cluster-ca", cert)
	trustingURL, trusting := node("trusting", "--cluster-ca", cert)
	plainURL, plain := node("plain")

	pool, err := loadClusterCA(cert) // the client trusts the cluster's authority too
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	post := func(url, sid, body string) (*http.Response, string) {
		t.Helper()
		resp, err := client.Do(mcpRequest(url, sid, body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, _ := post(ownerURL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(sid, "owner.") {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, sid)
	}
	post(ownerURL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","arguments":{}}}`
	if resp, body := post(trustingURL, sid, call); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Errorf("through the node given --cluster-ca: status %d, body %s; want the owner's answer", resp.StatusCode, body)
	}
	if resp, body := post(plainURL, sid, call); resp.StatusCode != http.StatusNotFound {
		t.Errorf("through the node without --cluster-ca: status %d, body %s; want 404 (the owner's certificate refused)", resp.StatusCode, body)
	}
	plain.stop(t)
	trusting.stop(t)
	owner.stop(t)
}

// TestServeClusterNATSTLS: a tls:// NATS server whose certificate a private
// authority signed: serve joins it given that authority with --cluster-ca,
// and refuses to start without it.
func TestServeClusterNATSTLS(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	key := stateKeyFile(t)
	cert, certKey := selfSigned(t)
	pair, err := tls.LoadX509KeyPair(cert, certKey)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := natsserver.NewServer(&natsserver.Options{
		Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
		TLS: true, TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
	})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS did not start")
	}
	url := strings.Replace(srv.ClientURL(), "nats://", "tls://", 1)
	args := []string{"--dir", dir, "--addr", "127.0.0.1:0", "--state-key-file", key, "--nats", url}

	err = newApp(io.Discard, io.Discard).Run(append([]string{"luamcp", "serve"}, args...))
	if err == nil || !strings.Contains(err.Error(), "--nats") {
		t.Errorf("serve without --cluster-ca: error %v, want the NATS server's certificate refused", err)
	}
	var logs syncbuf.Buffer
	run := startServe(t, &logs, append(args, "--cluster-ca", cert)...)
	run.lines(t, 1)
	if !strings.Contains(logs.String(), "joined the cluster") {
		t.Errorf("serve with --cluster-ca did not join:\n%s", logs.String())
	}
	run.stop(t)
}

// TestNATSTLS: which --nats values ask for TLS, and so get --cluster-ca.
func TestNATSTLS(t *testing.T) {
	for _, tc := range []struct {
		urls string
		want bool
	}{
		{"nats://10.0.0.2:4222", false},
		{"tls://10.0.0.2:4222", true},
		{"nats://a:4222, TLS://b:4222", true},
		{"embedded", false},
	} {
		if got := natsTLS(tc.urls); got != tc.want {
			t.Errorf("natsTLS(%q) = %v, want %v", tc.urls, got, tc.want)
		}
	}
}
