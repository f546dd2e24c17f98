package bridge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// JSON built or read for a state may take what its memory budget has left,
// no more: the attack fails alone and quickly, and the state goes on.
func TestJSONWithinBudget(t *testing.T) {
	const limit = 16 << 20
	tests := []struct{ name, chunk, want string }{
		{"encode shared tables", `local t = {"xxxxxxxxxxxxxxxx"} for i = 1, 26 do t = {t, t} end return #mcp.json_encode(t)`,
			"memory limit exceeded"},
		{"encode big strings", `local s = string.rep("x", 5e6) return #mcp.json_encode({s, s, s, s})`,
			"memory limit exceeded"},
		{"decode nested arrays", `return mcp.json_decode("[" .. string.rep("[],", 2e6) .. "[]]")`,
			"memory limit exceeded"},
		{"decode long strings", `local s = '"' .. string.rep("x", 4e6) .. '"' return mcp.json_decode("[" .. string.rep(s .. ",", 4) .. s .. "]")`,
			"memory limit exceeded"},
		{"decode objects", `return mcp.json_decode("[" .. string.rep('{"a":1},', 2e5) .. "{}]")`,
			"memory limit exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.L.SetMemoryLimit(limit)
			start := time.Now()
			h.mustFail(t, tt.chunk, tt.want)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("failed after %v", d)
			}
			if got := h.mustRun(t, `return mcp.json_encode(mcp.json_decode('{"a":[1,2,"x"]}'))`); got != `{"a":[1,2,"x"]}` {
				t.Errorf("the state no longer works: %s", got)
			}
		})
	}
}

// A state holding garbage from earlier work still decodes and encodes what
// fits: the garbage is measured away before the answer is no.
func TestJSONBudgetMeasuresGarbage(t *testing.T) {
	h := newHarness(t)
	h.L.SetMemoryLimit(16 << 20)
	h.mustRun(t, `for i = 1, 7 do local s = string.rep("x", 1e6) .. i end`)
	if got := h.L.MemoryAccounted(); got < 12<<20 {
		t.Fatalf("the garbage is not accounted (%d bytes): the test proves nothing", got)
	}
	v, err := h.c.Decode([]byte(`["` + strings.Repeat("y", 4e6) + `"]`))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if _, err := h.c.Encode(v, "value"); err != nil {
		t.Fatalf("Encode: %v", err)
	}
}

// Encoding and decoding stop when the state's context is done.
func TestJSONHonoursCancellation(t *testing.T) {
	L, c, _ := newState(t)
	deep := eval(t, L, `local t = {"x"} for i = 1, 24 do t = {t, t} end return t`)
	text := []byte("[" + strings.Repeat(`{"a":[1,2,3]},`, 1e5) + "{}]")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	L.SetContext(ctx)
	defer L.RemoveContext()
	if _, err := c.Encode(deep, "value"); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("Encode: %v", err)
	}
	if _, err := c.Decode(text); !errors.Is(err, context.Canceled) {
		t.Errorf("Decode: %v", err)
	}
}

// Decoding refuses what would not fit, with an error wrapping
// lua.ErrMemoryLimit, outside any call too.
func TestDecodeRefusesOutsideCalls(t *testing.T) {
	L, c, _ := newState(t)
	L.SetMemoryLimit(1 << 20)
	_, err := c.Decode([]byte("[" + strings.Repeat(`"xxxxxxxxxxxxxxxxxxxxxxxx",`, 1e5) + `""]`))
	if !errors.Is(err, lua.ErrMemoryLimit) {
		t.Fatalf("Decode: %v", err)
	}
	if v, err := c.Decode([]byte(`{"ok":true}`)); err != nil || v == lua.LNil {
		t.Errorf("small Decode: %v, %v", v, err)
	}
}

// Decoded values are charged to the budget, not only checked against what it
// has left: a state kept 100 decoded MiB under a 16 MiB limit, one decode at
// a time, and no measure ever ran. Keeping them now fails; a decoded value
// that is dropped is garbage, and decoding goes on.
func TestDecodedValuesAreCharged(t *testing.T) {
	tests := []struct{ name, src string }{
		{"string", `mcp.json_encode(string.rep("x", 1024 * 1024))`},
		{"strings", `mcp.json_encode({string.rep("x", 512 * 1024), string.rep("y", 512 * 1024)})`},
		{"objects", `"[" .. string.rep('{"key":"value"},', 5000) .. "{}]"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.L.SetMemoryLimit(16 << 20)
			h.mustRun(t, `SRC = `+tt.src)
			h.mustRun(t, `for i = 1, 100 do local v = mcp.json_decode(SRC) end`)
			h.mustFail(t, `KEEP = {} for i = 1, 100 do KEEP[i] = mcp.json_decode(SRC) end`, "memory limit exceeded")
			h.mustRun(t, `KEEP = nil; return mcp.json_encode(mcp.json_decode('{"a":[1,2,"x"]}'))`)
		})
	}
}
