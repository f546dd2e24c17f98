package luavm

import (
	"strings"
	"testing"
)

// TestCrashLogs: every crash a script author can cause is logged with the
// script, the callback, file:line and, for Lua errors, the traceback.
func TestCrashLogs(t *testing.T) {
	src := `return {
  init = function() return { name = "e", version = "1" }, {}, {} end,
  tools = function() return { { name = "raise" }, { name = "bad_result" } } end,
  handle_tool = function(name)
    if name == "raise" then
      local t = nil
      return t.field
    end
    return { content = { print } }
  end,
}
`
	s, logs := loadSource(t, "e.lua", src)
	ss, _ := open(t, s, "")
	for _, tc := range []struct {
		tool string
		want []string
	}{
		{"raise", []string{"script=e", "callback=handle_tool", "e.lua:7:", "traceback="}},
		{"bad_result", []string{"script=e", "callback=handle_tool", "e.lua:4: result.content[1]"}},
	} {
		if _, err := call(t, ss, tc.tool, `{}`); !isCrash(err) {
			t.Errorf("%s: %v, want a crash", tc.tool, err)
		}
		var line string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "Lua callback failed") && strings.Contains(l, tc.want[2]) {
				line = l
			}
		}
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: the crash log line %q lacks %q\nlog:\n%s", tc.tool, line, w, logs.String())
			}
		}
	}
}
