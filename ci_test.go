package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestToolsCheck runs .ci/tools.sh, the first step of make test, on a PATH
// that lacks every tool: it must name them all and give one apt-get line,
// not stop at the first (a fresh machine would need a run per tool). With
// every tool there it passes silently.
func TestToolsCheck(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	run := func() (string, error) {
		cmd := exec.Command(bash, filepath.Join(".ci", "tools.sh"))
		cmd.Env = []string{"PATH=" + bin}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run()
	if err == nil {
		t.Fatalf("tools.sh passed with no tool on PATH:\n%s", out)
	}
	// nginx is also found at /usr/sbin/nginx, off the PATH of a user
	// without sbin in it: where it is installed, it is not missing.
	missing := []string{"npm", "node", "gcc", "haproxy", "nginx", "python3", "curl", "wine", "systemd-socket-activate", "x86_64-w64-mingw32-gcc"}
	packages := "nodejs npm gcc haproxy nginx python3 curl wine wine64 systemd gcc-mingw-w64-x86-64"
	if fi, err := os.Stat("/usr/sbin/nginx"); err == nil && fi.Mode()&0o111 != 0 {
		missing = slices.DeleteFunc(missing, func(s string) bool { return s == "nginx" })
		packages = strings.Replace(packages, " nginx", "", 1)
	}
	for _, tool := range missing {
		if !strings.Contains(out, "\n  "+tool+": ") {
			t.Errorf("tools.sh does not name %s:\n%s", tool, out)
		}
	}
	if want := "apt-get install -y " + packages + "\n"; !strings.Contains(out, want) {
		t.Errorf("tools.sh lacks the line %q:\n%s", want, out)
	}

	for _, tool := range []string{"npm", "node", "cc", "haproxy", "nginx", "python3", "curl", "wine", "systemd-socket-activate", "x86_64-w64-mingw32-gcc"} {
		if err := os.WriteFile(filepath.Join(bin, tool), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := run(); err != nil || out != "" {
		t.Errorf("tools.sh with every tool: %v\n%s", err, out)
	}
}
