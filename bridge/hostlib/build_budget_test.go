package hostlib

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
)

// TestResultsWithinTheBudget: a module that builds its result in Go from a
// script's values refuses one the budget cannot hold before building it, the
// way the module fails (nil, message or a raised error), and allocates little
// doing so: one 1 MiB string referenced 200 times, or an empty pattern over
// a large subject, made these calls allocate hundreds of MiB to GiBs under a
// 16 MiB budget.
func TestResultsWithinTheBudget(t *testing.T) {
	L, _ := newLua(t, nil)
	L.SetMemoryLimit(16 << 20)
	L.SetGlobal("REFUSED", lstr("would exceed the script's memory limit"))
	if err := L.DoString(`
		BIG = string.rep("x", 2^20)
		REFS = {}
		for i = 1, 200 do REFS[i] = BIG end
		function refused(v, err) eq(v, nil); eq(err:find(REFUSED, 1, true) ~= nil, true, err) end
		function raises(f, ...) local err = fails(f, ...); eq(err:find(REFUSED, 1, true) ~= nil, true, err) end
	`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []luaCase{
		{"url.query", `raises(url.query, { k = REFS })`},
		{"url.build", `raises(url.build, { scheme = "http", host = "h", query = { k = REFS } })`},
		{"json.encode indent", `
			local wide = {}
			for i = 1, 200000 do wide[i] = 0 end
			local t = wide
			for i = 1, 190 do t = { t } end
			refused(json.encode(t, { indent = true }))`},
		{"re.replace", `refused(re.replace("", BIG, string.rep("y", 200)))`},
		{"re.replace captures", `refused(re.replace("(x+)", BIG, "$1$1$1$1$1$1$1$1$1$1$1$1$1$1$1$1$1$1"))`},
		{"base64.encode", `raises(base64.encode, string.rep("x", 12e6))`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			if err := L.DoString(c.code); err != nil {
				t.Errorf("%s", strings.TrimSpace(err.Error()))
			}
			L.SetTop(0)
			runtime.ReadMemStats(&after)
			if mib := (after.TotalAlloc - before.TotalAlloc) >> 20; mib > 64 && !raceEnabled {
				t.Errorf("allocated %d MiB under a 16 MiB budget", mib)
			}
		})
	}
	// What fits is still built.
	runCases(t, L, []luaCase{
		{"url.query fits", `eq(#url.query({ k = { BIG, BIG } }), 2 * (2 + 2^20) + 1)`},
		{"json.encode indent fits", `eq(json.encode({ a = { 1 } }, { indent = true }), '{\n  "a": [\n    1\n  ]\n}')`},
		{"re.replace fits", `eq(re.replace("(b)", "abc", "[$1$1]"), "a[bb]c")`},
		{"base64.encode fits", `eq(base64.encode("hello"), "aGVsbG8=")`},
	})
}

// TestReCountsAreClamped: an explicit n past maxMatches counts as
// maxMatches: re.find_all("()", 8 MB, 1e9) found 8 million matches in one
// uninterruptible call, seconds past its call's timeout, and held them all
// in Go memory.
func TestReCountsAreClamped(t *testing.T) {
	L, _ := newLua(t, nil)
	L.SetGlobal("S", lstr(strings.Repeat("x", 8e6)))
	runCases(t, L, []luaCase{
		{"find_all", `eq(#re.find_all("", S, 1e9), 100000)`},
		{"find_all captures", `local ms = re.find_all("()", S, 1e9); eq(#ms, 100000); eq(ms[100000][1], "")`},
		{"split", `local ps = re.split("", S, 1e9); eq(#ps, 100000); eq(#ps[100000], 8e6 - 99999)`},
		{"within", `eq(#re.find_all("x", S, 5), 5); eq(#re.split("x", S, 3), 3)`},
		{"without n", `local v, err = re.find_all("x", S); eq(v, nil); eq(err, "re: more than 100000 matches (pass n to take the first n)")`},
	})
}

// errContext is a context whose Err reports it cancelled while its Done
// channel never closes: the VM, which selects on Done between instructions,
// runs on, so only a check inside the Go call can stop it.
type errContext struct{ context.Context }

func (errContext) Done() <-chan struct{} { return make(chan struct{}) }
func (errContext) Err() error            { return context.Canceled }

// TestResultLoopsCheckTheContext: the loops that turn many items into a
// result stop once the call is cancelled, not only the Lua code around them.
func TestResultLoopsCheckTheContext(t *testing.T) {
	L, _ := newLua(t, nil)
	if err := L.DoString(`
		S = string.rep("x", 50000)
		LIST = {}
		for i = 1, 10000 do LIST[i] = "v" end
	`); err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{
		`return re.find_all("x", S)`,
		`return re.find_all("(x)", S)`,
		`return re.split("x", S)`,
		`return re.replace("x", S, "y")`,
		`return url.query({ k = LIST })`,
	} {
		t.Run(code, func(t *testing.T) {
			L.SetContext(errContext{context.Background()})
			defer L.RemoveContext()
			err := L.DoString(code)
			if err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) {
				t.Errorf("got %v, want %q", err, context.Canceled)
			}
			L.SetTop(0)
		})
	}
}

// TestQueryEscapedLen: the size url.query charges is the length of what it
// builds.
func TestQueryEscapedLen(t *testing.T) {
	for _, s := range []string{"", "abc", "a b", "a+b&c=d", "-_.~", "é/?#%", "\x00\xff", strings.Repeat("ü ", 100)} {
		if got, want := queryEscapedLen(s), len(url.QueryEscape(s)); got != want {
			t.Errorf("queryEscapedLen(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestKeptResultsAreCharged: what a module returns is charged to the memory
// budget, so a script cannot keep more than its limit one result at a time.
// The decoders and others returned results never charged: the budget's count
// stayed where it was, no measure ran, and a 16 MiB state kept 100 results of
// a MiB each. Results that are dropped are garbage, and the calls go on.
func TestKeptResultsAreCharged(t *testing.T) {
	header := strings.Repeat("h", 512<<10)
	mux := http.NewServeMux()
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", header)
		io.WriteString(w, "ok")
	})
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)
	lib := newLib(t, t.TempDir(), fmt.Sprintf(`{ http = { %q } }`, strings.TrimPrefix(api.URL, "http://")))
	const setup = `
		BIG = string.rep("x", 2^20)
		JSON = json.encode(BIG)
		B64 = base64.encode(BIG)
		B64URL = base64.url_encode(BIG)
		SLASHES = string.rep("/", 2^20)
		PLUSES = string.rep("+", 2^20) -- decoded to spaces: a copy
		URL = "http://h/?q=" .. PLUSES
		LAYOUT = string.rep("2006", 64)`
	tests := []struct {
		name, expr string
		n          int // results kept
	}{
		{"json.decode", `json.decode(JSON)`, 100},
		{"json.encode", `json.encode(BIG)`, 100},
		{"base64.decode", `base64.decode(B64)`, 100},
		{"base64.url_decode", `base64.url_decode(B64URL)`, 100},
		{"url.encode", `url.encode(SLASHES)`, 100},
		{"url.decode", `url.decode(PLUSES)`, 100},
		{"url.parse", `url.parse(URL)`, 100},
		{"url.build", `url.build({ scheme = "http", host = "h", path = SLASHES })`, 100},
		{"crypto.random_bytes", `crypto.random_bytes(2^20)`, 100},
		{"crypto.random_hex", `crypto.random_hex(2^19)`, 100},
		{"time.format", `time.format(0, LAYOUT)`, 100_000}, // 256 bytes each
		// A small max_bytes: the room for the body does not measure the state.
		{"http headers", `http.request{ url = BASE .. "/headers", max_bytes = 16 }`, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			L, _ := newLua(t, lib)
			L.SetMemoryLimit(16 << 20)
			L.SetGlobal("BASE", lstr(api.URL))
			if err := L.DoString(setup); err != nil {
				t.Fatal(err)
			}
			keep := fmt.Sprintf(`KEEP = {}
				for i = 1, %d do
				  local v, err = %s
				  if v == nil then error(err, 0) end
				  KEEP[i] = v
				end`, tt.n, tt.expr)
			err := L.DoString(keep)
			if err == nil || !strings.Contains(err.Error(), "memory limit") {
				t.Errorf("kept %d results under a 16 MiB budget: %v", tt.n, err)
			}
			L.SetTop(0)
			if err := L.DoString(`KEEP = nil; for i = 1, 20 do assert(` + tt.expr + `) end`); err != nil {
				t.Errorf("once they are dropped: %v", err)
			}
		})
	}
}

// TestFailureMessagesAreCharged: a failure message quoting what the script
// passed is charged like a result, and cut short past the budget: 100
// messages of a MiB each were kept under a 16 MiB budget.
func TestFailureMessagesAreCharged(t *testing.T) {
	L, _ := newLua(t, nil)
	L.SetMemoryLimit(16 << 20)
	runCases(t, L, []luaCase{
		{"cut past the budget", `local bad = "http://h:" .. string.rep("9", 2^20)
			local v, err = url.parse(bad); eq(v, nil); eq(#err > 2^20, true, "first message")
			KEEP = {}
			for i = 1, 100 do v, KEEP[i] = url.parse(bad) end
			eq(#KEEP[100] < 1024, true, "message 100")
			KEEP = nil`},
		{"short messages unchanged", `local v, err = url.decode("%zz"); eq(err, 'url: invalid URL escape "%zz"')`},
	})
}
