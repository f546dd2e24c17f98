//go:build linux

package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

// TestMain lets a test run this binary as `luamcp` (runLuamcp).
func TestMain(m *testing.M) {
	if os.Getenv("LUAMCP_TEST_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestServeNotifiesSystemd: under a Type=notify unit, serve says READY=1
// with a status once it answers, pings the watchdog at half its interval,
// updates the status after a change, and says STOPPING=1 when told to stop.
func TestServeNotifiesSystemd(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "200000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	datagrams := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(datagrams)
				return
			}
			datagrams <- string(buf[:n])
		}
	}()
	// until returns the first datagram that satisfies ok, skipping others.
	until := func(what string, ok func(string) bool) string {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case d := <-datagrams:
				if ok(d) {
					return d
				}
			case <-deadline:
				t.Fatalf("no %s datagram within 10s", what)
			}
		}
	}

	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	run := startServe(t, io.Discard, "--dir", dir, "--addr", "127.0.0.1:0")
	base := regexp.MustCompile(`^(http://127\.0\.0\.1:\d+)/mcp/s `).FindStringSubmatch(run.lines(t, 1)[0])
	if base == nil {
		t.Fatal("no route line")
	}
	ready := until("READY=1", func(d string) bool { return strings.HasPrefix(d, "READY=1\n") })
	if want := "READY=1\nSTATUS=serving 1 script at " + base[1]; ready != want {
		t.Errorf("readiness = %q, want %q", ready, want)
	}
	// The watchdog: at least two pings 100 ms apart, give or take.
	start := time.Now()
	until("WATCHDOG=1", func(d string) bool { return d == "WATCHDOG=1" })
	until("WATCHDOG=1", func(d string) bool { return d == "WATCHDOG=1" })
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("two watchdog pings within %v, want them 100 ms apart", d)
	}
	// A second script: the status follows.
	if err := os.WriteFile(filepath.Join(dir, "t.lua"), []byte(sessionScript), 0o644); err != nil {
		t.Fatal(err)
	}
	until("STATUS after a mount", func(d string) bool { return d == "STATUS=serving 2 scripts at "+base[1] })
	run.cancel()
	until("STOPPING=1", func(d string) bool { return d == "STOPPING=1" })
	if err := <-run.done; err != nil {
		t.Fatalf("serve ended with %v", err)
	}
}

// runActivated starts this test binary as `luamcp args...` under
// systemd-socket-activate listening on each of addrs: systemd's own tool,
// which binds them, waits for a first connection, then execs luamcp with the
// sockets as descriptors 3 on ($LISTEN_FDS, $LISTEN_PID, $LISTEN_FDNAMES).
// A missing tool fails the test: CI installs it (package systemd).
func runActivated(t *testing.T, addrs []string, args ...string) (*exec.Cmd, *bufio.Scanner, *syncbuf.Buffer) {
	t.Helper()
	tool, err := exec.LookPath("systemd-socket-activate")
	if err != nil {
		t.Fatalf("systemd-socket-activate not found (apt-get install -y systemd): %v", err)
	}
	var argv []string
	for _, a := range addrs {
		argv = append(argv, "-l", a)
	}
	argv = append(append(argv, "-E", "LUAMCP_TEST_RUN_MAIN=1", os.Args[0]), args...)
	cmd := exec.Command(tool, argv...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(syncbuf.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, bufio.NewScanner(stdout), stderr
}

// firstPost posts an initialize to url, retrying while nothing listens
// there yet, and returns the answer's status.
func firstPost(t *testing.T, url string) (int, error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.DefaultClient.Do(mcpRequest(url, "", initializeBody))
		if err == nil {
			resp.Body.Close()
			return resp.StatusCode, nil
		}
		if time.Now().After(deadline) {
			return 0, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePort returns a 127.0.0.1 address nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeSocketActivation: serve takes the socket systemd passes,
// answering the connection that activated it, and refuses more than one.
func TestServeSocketActivation(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	addr := freePort(t)
	cmd, out, stderr := runActivated(t, []string{addr}, "serve", "--dir", dir)
	status, err := firstPost(t, "http://"+addr+"/mcp/s")
	if err != nil || status != http.StatusOK {
		t.Fatalf("the initialize that activated serve: %d, %v\n%s", status, err, stderr)
	}
	if !out.Scan() {
		t.Fatalf("serve printed nothing: %s", stderr)
	}
	if want := "http://" + addr + "/mcp/s "; !strings.HasPrefix(out.Text(), want) {
		t.Errorf("route line %q, want it to start with %q", out.Text(), want)
	}
	go func() {
		for out.Scan() {
		}
	}()
	cmd.Process.Signal(syscall.SIGTERM) // systemd-socket-activate exec'd serve: the same process
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve ended with %v: %s", err, stderr)
	}

	// Two sockets: refused, with a message saying why.
	two := []string{freePort(t), freePort(t)}
	cmd, _, stderr = runActivated(t, two, "serve", "--dir", dir)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", two[0]) // activates it
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("systemd-socket-activate not listening on %s: %v", two[0], err)
		}
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(stderr.String(), "luamcp serves exactly one socket") {
		t.Errorf("two sockets passed: %v, %q", err, stderr)
	}
}

// TestSystemdUnits: the README's unit files (examples/systemd) are the ones
// here, and systemd-analyze finds nothing wrong in them (an unknown key or a
// bad value is only a warning to systemd: any output fails the test).
func TestSystemdUnits(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatalf("systemd-analyze not found (apt-get install -y systemd): %v", err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var units []string
	for _, name := range []string{"luamcp.socket", "luamcp.service"} {
		unit, err := os.ReadFile(filepath.Join("examples", "systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(readme), string(unit)) {
			t.Errorf("README.md does not show examples/systemd/%s verbatim", name)
		}
		// systemd-analyze checks that ExecStart's program exists: this
		// test binary stands in for /usr/local/bin/luamcp.
		unit = []byte(strings.ReplaceAll(string(unit), "/usr/local/bin/luamcp", os.Args[0]))
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, unit, 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, path)
	}
	out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, units...)...).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	// ExecStart's command line serves (its folder replaced by one here, and
	// the variables systemd sets expanded as it does).
	service, err := os.ReadFile(filepath.Join("examples", "systemd", "luamcp.service"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^ExecStart=/usr/local/bin/luamcp serve (.*)$`).FindSubmatch(service)
	if line == nil {
		t.Fatal("luamcp.service has no ExecStart=/usr/local/bin/luamcp serve ...")
	}
	scripts := writeScripts(t, map[string]string{"s.lua": sessionScript})
	state := t.TempDir() // StateDirectory=
	expanded := os.Expand(string(line[1]), func(name string) string {
		if name != "STATE_DIRECTORY" {
			t.Fatalf("ExecStart uses $%s, which this test does not set", name)
		}
		return state
	})
	args := strings.Fields(strings.ReplaceAll(expanded, "/srv/luamcp/scripts", scripts))
	run := startServe(t, io.Discard, append(args, "--addr", "127.0.0.1:0")...)
	got := run.lines(t, 1)[0]
	if !strings.Contains(got, "/mcp/s ") {
		t.Fatalf("serve with ExecStart's arguments printed %q", got)
	}
	// A session at the stop is saved in the state folder.
	resp := postMCP(t, nil, strings.Fields(got)[0], "", initializeBody)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: status %d", resp.StatusCode)
	}
	run.stop(t)
	if _, err := os.Stat(filepath.Join(state, "sessions.json")); err != nil {
		t.Errorf("the unit's serve saved no session in its StateDirectory: %v", err)
	}
}
