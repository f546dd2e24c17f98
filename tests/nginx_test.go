package tests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// nginxConfig is the nginx configuration the README shows (verbatim) for
// serving luamcp behind nginx.
var nginxConfig = filepath.Join("..", "examples", "nginx", "luamcp.conf")

// startNginx runs nginx with nginxConfig in front of upstream (host:port)
// and returns the address it listens on.
func startNginx(t *testing.T, upstream string) string {
	t.Helper()
	conf, err := os.ReadFile(nginxConfig)
	if err != nil {
		t.Fatal(err)
	}
	listen := freeAddr(t)
	if !bytes.Contains(conf, []byte("server 127.0.0.1:8750;")) || !bytes.Contains(conf, []byte("listen 80;")) {
		t.Fatalf("%s no longer says server 127.0.0.1:8750 and listen 80, which the test replaces", nginxConfig)
	}
	site := strings.Replace(string(conf), "server 127.0.0.1:8750;", "server "+upstream+";", 1)
	site = strings.Replace(site, "listen 80;", "listen "+listen+";", 1)
	dir := t.TempDir()
	main := `daemon off;
worker_processes 1;
pid ` + filepath.Join(dir, "nginx.pid") + `;
error_log stderr warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path ` + filepath.Join(dir, "body") + `;
    proxy_temp_path ` + filepath.Join(dir, "proxy") + `;
    fastcgi_temp_path ` + filepath.Join(dir, "fastcgi") + `;
    uwsgi_temp_path ` + filepath.Join(dir, "uwsgi") + `;
    scgi_temp_path ` + filepath.Join(dir, "scgi") + `;
    include ` + filepath.Join(dir, "luamcp.conf") + `;
}
`
	for name, body := range map[string]string{"nginx.conf": main, "luamcp.conf": site} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(findProxy(t, "nginx"), "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", "stderr")
	runProxy(t, "nginx", cmd, listen)
	return listen
}

// TestNginx serves a session route behind nginx with the README's
// configuration and drives it with the official Go SDK client: the session
// keeps its state, a push to its GET stream arrives while the stream stays
// open (nginx does not hold it back), progress arrives before the result,
// and DELETE ends the session.
func TestNginx(t *testing.T) {
	inReadme(t, nginxConfig)

	s := startServer(t, "proxied")
	proxied := "http://" + startNginx(t, s.hostPort()) + "/mcp/proxied"
	logged := newCounter()
	var mu sync.Mutex
	var steps []string
	a := connectGo(t, proxied, &sdk.ClientOptions{
		LoggingMessageHandler: func(context.Context, *sdk.LoggingMessageRequest) { logged.add() },
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			steps = append(steps, req.Params.Message)
			mu.Unlock()
		},
	}, latestVersion)
	a.watch.wait(t) // the GET stream, through nginx

	for i := 1; i <= 3; i++ {
		a.wantText(t, "count", nil, string(rune('0'+i)))
	}

	// A push from another client reaches the open GET stream at once.
	b := connectGo(t, s.url("proxied"), nil, latestVersion)
	b.call(t, "log", map[string]any{"level": "error", "to": a.ID()})
	logged.wait(t, "a log pushed to the session's GET stream through nginx", 1)

	params := &sdk.CallToolParams{Name: "progress"}
	params.SetProgressToken("through-nginx")
	res, err := a.CallTool(goCtx(t), params)
	if err != nil || goText(t, res) != "done" {
		t.Fatalf("progress through nginx = %+v, %v", res, err)
	}
	deadline := time.Now().Add(waitShort) // the SDK runs handlers asynchronously
	for {
		mu.Lock()
		n := len(steps)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if !reflect.DeepEqual(steps, []string{"step 1/2", "step 2/2"}) {
		t.Errorf("progress through nginx = %q, want [step 1/2 step 2/2]", steps)
	}
	mu.Unlock()

	if err := a.Close(); err != nil { // DELETE, through nginx
		t.Fatal(err)
	}
	// Only b's session is left.
	sessions := func() int {
		for _, r := range s.host.Stats() {
			if r.Path == "/mcp/proxied" {
				return r.Sessions
			}
		}
		return -1
	}
	for deadline := time.Now().Add(waitLong); sessions() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sessions after the DELETE through nginx: %d, want 1", sessions())
		}
	}
}
