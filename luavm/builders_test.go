package luavm

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/internal/logcap"
)

// TestOneValueManyTimesWithinTheBudget: print and string.format build their
// text in Go from values a script may pass many times over (one 1 MiB string
// 200 times, by unpack), so a call under a 16 MiB budget allocated hundreds
// of MiB. print builds no more than the log keeps; string.format charges
// every string argument %s prints whole and fails, and takes a string
// under a numeric verb as a number (a type error, nothing built).
func TestOneValueManyTimesWithinTheBudget(t *testing.T) {
	s, logs := loadSource(t, "many.lua", `
return {
  route = { memory_limit_mb = 16 },
  init = function() return { name = "many", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "any" } } end,
  handle_tool = function(name, args)
    local big = string.rep("x", 2^20)
    local refs = {}
    for i = 1, args.n do refs[i] = big end
    if args.kind == "print" then
      print(unpack(refs))
      return "printed"
    end
    return #string.format(string.rep(args.verb, args.n), unpack(refs))
  end,
}`)
	for _, tc := range []struct {
		name, args string
		want       string // the result; an error; "" for "memory limit exceeded"
	}{
		{"print", `{"kind":"print","n":200}`, "printed"},
		{"format %x", `{"kind":"format","verb":"%x","n":100}`, "number expected, got string"},
		{"format %d", `{"kind":"format","verb":"%d","n":100}`, "number expected, got string"},
		{"format %s", `{"kind":"format","verb":"%s","n":200}`, ""},
		{"format %q", `{"kind":"format","verb":"%q","n":200}`, ""},
		{"format %s fits", `{"kind":"format","verb":"%s","n":2}`, strconv.Itoa(2 << 20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss, _ := open(t, s, "")
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			res, err := call(t, ss, "any", tc.args)
			runtime.ReadMemStats(&after)
			if mib := (after.TotalAlloc - before.TotalAlloc) >> 20; mib > 64 {
				t.Errorf("allocated %d MiB under a 16 MiB budget", mib)
			}
			switch {
			case tc.want == "":
				if err == nil || !strings.Contains(err.Error(), "memory limit exceeded") {
					t.Errorf("got %s, %v; want the error memory limit exceeded", res, err)
				}
			case strings.Contains(tc.want, " "): // an error
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got %s, %v; want the error %s", res, err, tc.want)
				}
			case err != nil:
				t.Errorf("error %v, want %s", err, tc.want)
			case text(t, res) != tc.want:
				t.Errorf("got %s, want %s", text(t, res), tc.want)
			}
		})
	}
	// The log kept the head of the printed text and how much was cut, once.
	const total = 200<<20 + 199 // 200 strings and the tabs between them
	marker := strconv.Itoa(total-(logcap.Max-64)) + " bytes cut]"
	if out := logs.String(); !strings.Contains(out, marker) || strings.Count(out, "bytes cut]") != 1 {
		t.Errorf("want one marker %q in the log:\n%.300s", marker, out)
	}
}
