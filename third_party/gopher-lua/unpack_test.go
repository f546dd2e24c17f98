package lua

import (
	"strings"
	"testing"
)

// unpack's count is end - start + 1 computed without overflow: an end that
// converts to the least int (NaN, ±2^63, ±inf) is no values, a range past
// 2^31 values is "too many results to unpack", as in Lua 5.1. The count
// wrapped to a huge number of values the loop never pushed, and the caller
// copied them from past the value stack (FuzzChunk's fifth finding,
// `print(unpack({},2,7%00))`: index out of range, a Go panic).
func TestUnpackBounds(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`result = select("#", unpack({}, 2, 0/0))`, "0"},
		{`result = select("#", unpack({}, 2, 7 % 0))`, "0"},
		{`result = select("#", unpack({}, 2, -2^63))`, "0"},
		{`result = select("#", unpack({}, 2, 1/0))`, "0"},
		{`result = select("#", unpack({1, 2, 3}))`, "3"},
		{`result = select("#", unpack({1, 2, 3}, 2))`, "2"},
		{`result = select("#", unpack({}, 3, 2))`, "0"},
		{`result = select("#", unpack({}, -2, 2))`, "5"},
		{`result = select(2, pcall(unpack, {}, -2^62, 2^62))`, "too many results to unpack"},
		{`result = select(2, pcall(unpack, {}, 1, 2^31))`, "too many results to unpack"},
		{`local t = {unpack({}, 2, 0/0)} result = #t`, "0"},
	} {
		L := NewState(Options{CallStackSize: 200, RegistrySize: 256, RegistryMaxSize: 64 << 10, RegistryGrowStep: 2048, MinimizeStackMemory: true})
		err := L.DoString(c.src)
		got := L.GetGlobal("result").String()
		L.Close()
		if err != nil || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, %v; want %q", c.src, got, err, c.want)
		}
	}
}
