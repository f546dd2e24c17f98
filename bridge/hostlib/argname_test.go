package hostlib

import (
	"slices"
	"strings"
	"testing"
)

// TestArgErrorNames checks the function an argument error names, for a
// function of every module: as the call names it when it names it (Lua's
// rule: a direct call reads 'decode'), and qualified when it does not
// (pcall(json.decode, {}), a metamethod's call), where it read '(anonymous)'. The
// sandbox's own library keeps its messages.
func TestArgErrorNames(t *testing.T) {
	dir := t.TempDir()
	lib := newLib(t, dir, `{ read = { "." }, env = { "HOME" }, exec = { "true" }, http = { "example.com" } }`)
	L, _ := newLua(t, lib)
	for _, tt := range []struct {
		fn, arg, short, cause string
	}{
		{"json.decode", "{}", "decode", "string expected, got table"},
		{"base64.encode", "{}", "encode", "string expected, got table"},
		{"crypto.sha256", "{}", "sha256", "string expected, got table"},
		{"crypto.raw.sha256", "{}", "sha256", "string expected, got table"},
		{"time.format", "{}", "format", "number expected, got table"},
		{"re.match", "{}", "match", "string expected, got table"},
		{"url.encode", "{}", "encode", "string expected, got table"},
		{"env.get", "{}", "get", "string expected, got table"},
		{"fs.read", "{}", "read", "string expected, got table"},
		{"exec.run", "42", "run", "table expected, got number"},
		{"http.get", "{}", "get", "string expected, got table"},
	} {
		t.Run(tt.fn, func(t *testing.T) {
			for _, c := range []struct{ how, code, name string }{
				{"direct call", tt.fn + "(" + tt.arg + ")", tt.short},
				{"local alias", "local f = " + tt.fn + "; f(" + tt.arg + ")", "f"},
				{"called by pcall", "error(select(2, pcall(" + tt.fn + ", " + tt.arg + ")), 0)", tt.fn},
				{"called by a metamethod", "setmetatable(" + tt.arg + ", {__call = " + tt.fn + "})()", tt.fn},
			} {
				if tt.arg != "{}" && c.how == "called by a metamethod" {
					continue // __call passes a table
				}
				err := L.DoString(c.code)
				want := "bad argument #1 to '" + c.name + "' (" + tt.cause + ")"
				if err == nil {
					t.Errorf("%s: no error, want %q", c.how, want)
					continue
				}
				// The message, not its traceback, which names the frames.
				msg, _, _ := strings.Cut(err.Error(), "\nstack traceback:")
				if !strings.HasSuffix(msg, want) || strings.Contains(msg, ".go") {
					t.Errorf("%s: %q, want %q", c.how, msg, want)
				}
			}
		})
	}
	// Every module has a case above: a new module's functions are named too.
	var names []string
	for name := range Modules() {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"base64", "crypto", "env", "exec", "fs", "http", "json", "re", "time", "url"}; !slices.Equal(names, want) {
		t.Errorf("modules %v, want a case for each of them (%v)", names, want)
	}
	// The sandbox's library is not the host's: its messages are Lua's.
	for code, want := range map[string]string{
		`string.rep()`:            "bad argument #1 to 'rep' (string expected, got no value)",
		`table.insert(1, 2)`:      "bad argument #1 to 'insert' (table expected, got number)",
		`math.floor({})`:          "bad argument #1 to 'floor' (number expected, got table)",
		`local s = ("x"):rep({})`: "bad argument #1 to 'rep' (number expected, got table)",
	} {
		if err := L.DoString(code); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", code, err, want)
		}
	}
}
