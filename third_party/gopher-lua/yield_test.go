package lua

import (
	"strings"
	"testing"
)

// A coroutine cannot yield from inside a Lua call Go made (pcall, xpcall,
// a comparison of table.sort, a replacement function of gsub, a
// metamethod Go calls): as in Lua 5.1, the yield is the error "attempt to
// yield across metamethod/C-call boundary". Upstream let the yield through;
// the Go call's mainLoop then ran the coroutine on after its resumer went
// on, and the next resume dereferenced a nil frame (a Go panic recovered
// as a Lua error).
func TestYieldAcrossGoCall(t *testing.T) {
	for _, tt := range []struct{ name, body, want string }{
		{"pcall", `return pcall(function() coroutine.yield(1) error("after") end)`, "false <string>:2: attempt to yield across"},
		{"pcall_yield", `return pcall(coroutine.yield, 1)`, "false <string>:2: attempt to yield across"},
		{"xpcall", `return xpcall(function() coroutine.yield(1) end, function(e) return "handled: " .. e end)`, "false handled: <string>:2: attempt to yield across"},
		{"xpcall_handler", `return xpcall(error, function(e) coroutine.yield(1) return e end)`, "false error in error handling"}, // the yield's error is in the handler: Lua 5.1's LUA_ERRERR
		{"sort", `table.sort({3, 2, 1}, function(a, b) coroutine.yield() return a < b end)`, "attempt to yield across"},
		{"gsub", `return (("abc"):gsub(".", function(c) coroutine.yield(c) end))`, "attempt to yield across"},
		{"tostring", `return tostring(setmetatable({}, {__tostring = function() coroutine.yield() return "x" end}))`, "attempt to yield across"},
		{"nested_coroutine", `return pcall(function() return coroutine.wrap(function() coroutine.yield(7) end)() end)`, "true 7"},
		{"plain", `coroutine.yield(1) return 2`, "2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, minimize := range []bool{false, true} {
				L := NewState(Options{CallStackSize: 200, MinimizeStackMemory: minimize})
				err := L.DoString(`
local co = coroutine.create(function() ` + tt.body + ` end)
local out = {}
for i = 1, 4 do
  local r = {coroutine.resume(co)}
  for j = 1, #r do r[j] = tostring(r[j]) end
  out[i] = table.concat(r, " ")
end
result = table.concat(out, "\n")`)
				got := L.GetGlobal("result").String()
				L.Close()
				if err != nil {
					t.Fatalf("minimize %v: %v", minimize, err)
				}
				if strings.Contains(got, "runtime error") || !strings.Contains(got, tt.want) {
					t.Errorf("minimize %v: resumes gave\n%s\nwant %q among them", minimize, got, tt.want)
				}
			}
		})
	}
}
