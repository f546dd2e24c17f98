package main

import (
	"io"
	"regexp"
	"testing"
)

// TestServeFromEnvironment: serve's flags can be set by LUAMCP_<FLAG>
// variables; the command line wins over them.
func TestServeFromEnvironment(t *testing.T) {
	dir := writeScripts(t, map[string]string{"s.lua": sessionScript})
	t.Setenv("LUAMCP_DIR", dir)
	t.Setenv("LUAMCP_ADDR", "127.0.0.1:0")
	run := startServe(t, io.Discard)
	if line := run.lines(t, 1)[0]; !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/mcp/s `).MatchString(line) {
		t.Errorf("serve configured by the environment printed %q", line)
	}
	run.stop(t)

	t.Setenv("LUAMCP_DIR", t.TempDir()) // empty: serve would wait for scripts
	other := writeScripts(t, map[string]string{"o.lua": sessionScript})
	run = startServe(t, io.Discard, "--dir", other)
	if line := run.lines(t, 1)[0]; !regexp.MustCompile(`^http://127\.0\.0\.1:\d+/mcp/o `).MatchString(line) {
		t.Errorf("--dir on the command line did not win over LUAMCP_DIR: %q", line)
	}
	run.stop(t)

	t.Setenv("LUAMCP_MAX_SESSIONS", "0")
	if err := newApp(io.Discard, io.Discard).Run([]string{"luamcp", "serve", "--dir", other}); err == nil ||
		!regexp.MustCompile(`--max-sessions must be at least 1`).MatchString(err.Error()) {
		t.Errorf("LUAMCP_MAX_SESSIONS=0: %v, want the flag's own error", err)
	}
}

func TestEnvVar(t *testing.T) {
	for name, want := range map[string]string{"addr": "LUAMCP_ADDR", "max-sessions": "LUAMCP_MAX_SESSIONS", "http3": "LUAMCP_HTTP3"} {
		if got := envVar(name); got != want {
			t.Errorf("envVar(%q) = %q, want %q", name, got, want)
		}
	}
}
