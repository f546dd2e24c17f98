package tests

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

// The end-to-end tests run the proxies the README shows (HAProxy, nginx) in
// front of luamcp, with the README's own configurations.

// findProxy returns the path of the proxy program name, also looked for in
// /usr/sbin (off a user's PATH on Debian). A missing one fails the test: CI
// installs it (.ci/run).
func findProxy(t *testing.T, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		bin, err = exec.LookPath(filepath.Join("/usr/sbin", name))
	}
	if err != nil {
		t.Fatalf("%s not found (apt-get install -y %s): %v", name, name, err)
	}
	return bin
}

// freeAddr returns a 127.0.0.1 address nothing listens on now, for a proxy
// to bind (nothing else asks for a port meanwhile).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runProxy starts cmd, a proxy that will listen on listen, and waits until
// it does. The proxy runs in a process group of its own, killed whole when
// the test ends (a worker left behind would hold the output pipe open);
// its output is logged when the test failed, and returned.
func runProxy(t *testing.T, name string, cmd *exec.Cmd, listen string) *syncbuf.Buffer {
	t.Helper()
	out := new(syncbuf.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = waitLong
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("%s output:\n%s", name, out.String())
		}
	})
	deadline := time.Now().Add(waitLong)
	for {
		c, err := net.Dial("tcp", listen)
		if err == nil {
			c.Close()
			return out
		}
		select {
		case <-exited:
			t.Fatalf("%s exited: %s", name, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening on %s within %v", name, listen, waitLong)
		}
	}
}

// inReadme fails the test unless README.md shows the file at path verbatim.
func inReadme(t *testing.T, path string) {
	t.Helper()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, file) {
		t.Errorf("README.md does not show %s verbatim", path)
	}
}
