package bridge

import (
	"strings"
	"testing"
)

// TestArgErrorNames: an argument error of an mcp function names it as the
// call does (mcp.sleep("x") is 'sleep', as in Lua), and as 'mcp.sleep'
// where the call gives no name (pcall(mcp.sleep, "x"), a metamethod), which
// read '(anonymous)'.
func TestArgErrorNames(t *testing.T) {
	h := newHarness(t)
	for _, tt := range []struct{ fn, arg, n, cause string }{
		{"sleep", `"x"`, "#1", "number expected, got string"},
		{"json_decode", `{}`, "#1", "string expected, got table"},
		{"notify", `{}`, "#1", "string expected, got table"},
		{"log", `"info"`, "#2", "string expected, got no value"},
	} {
		for _, c := range []struct{ how, chunk, name string }{
			{"direct call", "mcp." + tt.fn + "(" + tt.arg + ")", tt.fn},
			{"called by pcall", "error(select(2, pcall(mcp." + tt.fn + ", " + tt.arg + ")), 0)", "mcp." + tt.fn},
		} {
			want := "bad argument " + tt.n + " to '" + c.name + "' (" + tt.cause + ")"
			_, err := h.run(c.chunk)
			if err == nil {
				t.Errorf("%s, %s: no error, want %q", tt.fn, c.how, want)
				continue
			}
			if msg, _, _ := strings.Cut(err.Error(), "\nstack traceback:"); !strings.HasSuffix(msg, want) {
				t.Errorf("%s, %s: %q, want %q", tt.fn, c.how, msg, want)
			}
		}
	}
	if _, err := h.run(`local _ = setmetatable({}, {__index = mcp.sleep}).x`); err == nil || !strings.Contains(err.Error(), "bad argument #1 to 'mcp.sleep'") {
		t.Errorf("mcp.sleep as __index: %v, want it named 'mcp.sleep'", err)
	}
}
