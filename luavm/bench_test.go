package luavm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/luamcp/luamcp/mcp"
)

// BenchmarkCallToolEcho is a warm tools/call through a session-mode Session:
// tools() to check the name, the state backup, handle_tool, the result.
func BenchmarkCallToolEcho(b *testing.B) {
	for _, bc := range []struct {
		name   string
		params string
	}{
		{"state=small", `{}`},
		{"state=10k", `{"size":10000}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchCalls(b, echoSession(b, bc.params), "echo")
		})
	}
}

// BenchmarkStatelessRequest is one stateless tools/call as the transport
// makes it: InitCall on a borrowed state, the call, Close.
func BenchmarkStatelessRequest(b *testing.B) {
	s, _ := load(b, "echo.lua", nil)
	ctx := context.Background()
	c := testCall("")
	args := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		ss, _, err := s.InitCall(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ss.CallTool(ctx, c, "echo", args); err != nil {
			b.Fatal(err)
		}
		ss.Close("")
	}
}

// BenchmarkNewVM builds a sandboxed state and runs the script's chunk: what
// the pool filler does for every fresh state.
func BenchmarkNewVM(b *testing.B) {
	s, _ := load(b, "full.lua", nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		v, err := s.current().newVM(ctx)
		if err != nil {
			b.Fatal(err)
		}
		v.close()
	}
}

// BenchmarkNewVMRecorded is a build plus the baseline the pool records for
// recycling (recycle.go): what a filler now does for every fresh state.
func BenchmarkNewVMRecorded(b *testing.B) {
	s, _ := load(b, "full.lua", nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		v, err := s.current().pool.build(ctx)
		if err != nil {
			b.Fatal(err)
		}
		v.close()
	}
}

// BenchmarkRecycle is what a session's end costs when its state goes back
// to the fresh lane instead of being closed and rebuilt (BenchmarkNewVM):
// the pristine check and the reset. It reads the baseline's records only, so
// what the session did (if it left no mark) does not change its cost.
func BenchmarkRecycle(b *testing.B) {
	for _, name := range []string{"echo.lua", "full.lua"} {
		b.Run(name, func(b *testing.B) {
			s, _ := load(b, name, nil)
			v, err := s.current().pool.build(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			defer v.close()
			b.ReportAllocs()
			for b.Loop() {
				if err := v.recycle(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRecycleSession is a whole session on a recycled state: init, one
// tools/call, Close (which recycles); the pool never builds.
func BenchmarkRecycleSession(b *testing.B) {
	s, _ := load(b, "echo.lua", nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ss, _, err := s.Init(ctx, json.RawMessage(initParams), "sid")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ss.CallTool(ctx, testCall("sid"), "echo", json.RawMessage(`{"text":"hi"}`)); err != nil {
			b.Fatal(err)
		}
		ss.Close("normal")
	}
	b.StopTimer()
	recycled, _ := s.EndedStates()
	if recycled == 0 {
		b.Fatal("no state was recycled")
	}
	b.ReportMetric(float64(recycled)/float64(b.N), "recycled/op")
}

// BenchmarkCloneState is a full deep copy (Codec.Clone) of a state of 10,000
// entries: what the rollback backup cost before bridge.Mirror, which now
// patches the previous backup instead (BenchmarkCallToolEcho/state=10k).
func BenchmarkCloneState(b *testing.B) {
	for _, bc := range []struct{ name, code string }{
		{"flat10k", `local t = {} for i = 1, 10000 do t["k" .. i] = i end return t`},
		{"tables10k", `local t = {} for i = 1, 10000 do t["k" .. i] = { id = i, name = "item " .. i } end return t`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, _ := load(b, "echo.lua", nil)
			v, err := s.current().newVM(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			defer v.close()
			if err := v.L.DoString(bc.code); err != nil {
				b.Fatal(err)
			}
			state := v.L.Get(-1).(*lua.LTable)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.codec.Clone(state); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// echoSession starts a session of testdata/echo.lua with init params (e.g.
// {"size":10000} for a large state), closed when the benchmark ends.
func echoSession(b *testing.B, params string) mcp.Session {
	b.Helper()
	s, _ := load(b, "echo.lua", nil)
	ss, _, err := s.Init(context.Background(), json.RawMessage(params), "sid")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close("") })
	return ss
}

// toolsScript builds its n tools inside tools(), the natural way to write
// it; reuse is the route option reuse_lists.
func toolsScript(n int, reuse bool) string {
	return fmt.Sprintf(`return {
  route = { sessions = true, reuse_lists = %s },
  init = function() return { name = "t", version = "1" }, { tools = {} }, { count = 0 } end,
  tools = function(state)
    local out = {}
    for i = 1, %d do
      out[i] = { name = "tool" .. i, description = "Tool number " .. i,
                 input_schema = { type = "object", properties = { text = { type = "string" } }, required = { "text" } } }
    end
    return out
  end,
  handle_tool = function(name, args, ctx, state)
    state.count = state.count + 1
    return args.text
  end,
}`, map[bool]string{true: "nil", false: "false"}[reuse], n)
}

// BenchmarkCallToolList is a warm tools/call of the last tool of a script
// that builds its list of 1 or 100 tools inside tools() (a constant
// function, so reused by default), each call writing to the state; with
// reuse_lists = false every lookup runs tools() again, as before lists were
// reused.
func BenchmarkCallToolList(b *testing.B) {
	for _, n := range []int{1, 100} {
		for _, reuse := range []bool{true, false} {
			b.Run(fmt.Sprintf("tools=%d/reuse=%v", n, reuse), func(b *testing.B) {
				dir := b.TempDir()
				file := filepath.Join(dir, "t.lua")
				if err := os.WriteFile(file, []byte(toolsScript(n, reuse)), 0o644); err != nil {
					b.Fatal(err)
				}
				logger, _ := newLogger()
				s, err := Load(file, Config{Dir: dir, Logger: logger, PoolSize: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				ss, _, err := s.Init(context.Background(), nil, "sid")
				if err != nil {
					b.Fatal(err)
				}
				defer ss.Close("")
				benchCalls(b, ss, fmt.Sprintf("tool%d", n))
			})
		}
	}
}

// BenchmarkCallToolContent is BenchmarkCallToolEcho with a table result:
// three content blocks (text, image, resource_link) and structured
// content, built by each call; what a result's blocks cost to check.
func BenchmarkCallToolContent(b *testing.B) {
	s, _ := loadSource(b, "content.lua", `
return {
  init = function() return { name = "content", version = "1" }, { tools = {} }, { count = 0 } end,
  tools = { { name = "echo", input_schema = { type = "object" } } },
  handle_tool = function(name, args, ctx, state)
    state.count = state.count + 1
    return {
      content = {
        { type = "text", text = args.text },
        { type = "image", data = "aGVsbG8=", mimeType = "image/png" },
        { type = "resource_link", uri = "mem://x", name = "x" },
      },
      structured_content = { count = state.count },
    }
  end,
}`)
	ss, _, err := s.Init(context.Background(), nil, "sid")
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close("")
	benchCalls(b, ss, "echo")
}

// benchCalls is the loop of the session call benchmarks: tool called with
// {"text":"hello"} in session "sid", allocations reported.
func benchCalls(b *testing.B, ss mcp.Session, tool string) {
	ctx := context.Background()
	c := testCall("sid")
	args := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ss.CallTool(ctx, c, tool, args); err != nil {
			b.Fatal(err)
		}
	}
}
