package luavm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/internal/logcap"
)

// TestLogsCapped: what a script makes the server log (crash messages,
// tracebacks, print output) is cut at logcap.Max, and a crash message is
// logged once even when the transport logs the error it is given.
func TestLogsCapped(t *testing.T) {
	dir := t.TempDir()
	src := `return {
  init = function() return { name = "big", version = "1" }, {}, {} end,
  tools = function() return { { name = "raise" }, { name = "print" }, { name = "bad_result" }, { name = "deep" } } end,
  handle_tool = function(name)
    local big = string.rep("M", 4 * 1024 * 1024)
    if name == "raise" then error("HEAD" .. big) end
    if name == "print" then print("HEAD" .. big) return "printed" end
    if name == "deep" then
      local function f(n) if n == 0 then error("HEAD" .. big) end return f(n - 1) + 1 end
      return f(150)
    end
    return { content = {}, structured_content = { ["HEAD" .. big] = print } }
  end,
}
`
	if err := os.WriteFile(filepath.Join(dir, "big.lua"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	logger, logs := newLogger()
	s, err := Load(filepath.Join(dir, "big.lua"), Config{Dir: dir, Logger: logger, PoolSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for _, tc := range []struct {
		tool  string
		crash bool
		cut   bool // the log cuts it; else it was short to begin with
	}{
		{"raise", true, true},
		{"print", false, true},
		{"bad_result", true, false}, // an encoding error names a long key by its start
		{"deep", true, true},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			ss, _ := open(t, s, "")
			before := len(logs.String())
			_, err := call(t, ss, tc.tool, `{}`)
			if tc.crash != isCrash(err) {
				t.Fatalf("crash = %v, want %v (%v)", isCrash(err), tc.crash, err)
			}
			if err != nil {
				if n := len(err.Error()); n > logcap.Max+200 {
					t.Errorf("the error is %d bytes long", n)
				}
				// What the transport does with a crash it is given.
				logger.Error("mcp: call failed", "method", "tools/call", "err", err)
			}
			out := logs.String()[before:]
			if n := len(out); n > 3*logcap.Max {
				t.Errorf("%d bytes logged for a 4 MiB value", n)
			}
			if tc.cut != strings.Contains(out, "bytes cut]") {
				t.Errorf("cut marker in the log: %v, want %v:\n%.300s", !tc.cut, tc.cut, out)
			}
			if n := strings.Count(out, "HEAD"); n != 1 {
				t.Errorf("the script's message appears %d times in the log, want once:\n%.2000s", n, out)
			}
		})
	}
}
