package luavm

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// TestCrashLogThrottle: the crashes of one place are logged once per
// crashLogEvery, the next line counting those held back; other places are
// logged at once; past maxCrashPlaces, quiet places are forgotten, and if
// none is, new places share one throttle.
func TestCrashLogThrottle(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type step struct {
		place string
		at    time.Duration
		ok    bool
		held  int
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"one place", []step{
			{"a", 0, true, 0},
			{"a", time.Second, false, 0},
			{"a", 2 * time.Second, false, 0},
			{"a", crashLogEvery, true, 2},
			{"a", crashLogEvery + time.Second, false, 0},
			{"a", 3 * crashLogEvery, true, 1},
		}},
		{"places apart", []step{
			{"a", 0, true, 0},
			{"b", time.Second, true, 0},
			{"a", 2 * time.Second, false, 0},
			{"b", 3 * time.Second, false, 0},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var l crashLog
			for i, s := range tt.steps {
				ok, held := l.allow(s.place, t0.Add(s.at))
				if ok != s.ok || held != s.held {
					t.Errorf("step %d (%s at %s): ok %v held %d, want %v %d", i, s.place, s.at, ok, held, s.ok, s.held)
				}
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		var l crashLog
		for i := range maxCrashPlaces {
			l.allow(strconv.Itoa(i), t0)
		}
		// Every place is within its window: a new one shares the overflow.
		if ok, _ := l.allow("new1", t0); !ok {
			t.Error("the first place past the bound not logged")
		}
		if ok, _ := l.allow("new2", t0); ok {
			t.Error("a second place past the bound logged within the window")
		}
		if n := len(l.places); n != maxCrashPlaces+1 {
			t.Errorf("%d places, want %d", n, maxCrashPlaces+1)
		}
		// Later, the quiet places are forgotten and a new one has its own.
		later := t0.Add(crashLogEvery)
		if ok, _ := l.allow("new3", later); !ok {
			t.Error("a new place after the window not logged")
		}
		if n := len(l.places); n > 2 {
			t.Errorf("%d places kept after the quiet ones were forgotten", n)
		}
	})
}

// TestCrashesLoggedOncePerPlace: a tool a client makes crash again and again
// is logged once (its traceback once), every call still answered as a
// crash; a crash at another place is logged at once; the transport is told
// which crashes were held back.
func TestCrashesLoggedOncePerPlace(t *testing.T) {
	dir := t.TempDir()
	src := `return {
  init = function() return { name = "buggy", version = "1" }, {}, {} end,
  tools = function() return { { name = "a" }, { name = "b" }, { name = "c" } } end,
  handle_tool = function(name, args)
    if name == "a" then error("bug A " .. tostring(args.n)) end
    if name == "b" then return nil + 1 end
    error("bug C without position", 0)
  end,
}
`
	if err := os.WriteFile(filepath.Join(dir, "buggy.lua"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	logger, logs := newLogger()
	s, err := Load(filepath.Join(dir, "buggy.lua"), Config{Dir: dir, Logger: logger, PoolSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ss, _ := open(t, s, "")
	for _, tt := range []struct {
		tool string
		runs int
	}{{"a", 20}, {"b", 3}, {"c", 3}} {
		before := len(logs.String())
		for i := range tt.runs {
			_, err := call(t, ss, tt.tool, `{"n":`+strconv.Itoa(i)+`}`)
			if !isCrash(err) {
				t.Fatalf("%s run %d: %v, want a crash", tt.tool, i, err)
			}
			var held mcp.Throttled
			if !errors.As(err, &held) || held.Throttled() != (i > 0) {
				t.Errorf("%s run %d: throttled = %v, want %v", tt.tool, i, held != nil && held.Throttled(), i > 0)
			}
		}
		out := logs.String()[before:]
		if n := strings.Count(out, "Lua callback failed"); n != 1 {
			t.Errorf("%s crashed %d times: %d lines logged, want 1:\n%s", tt.tool, tt.runs, n, out)
		}
	}
}
