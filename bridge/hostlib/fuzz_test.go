package hostlib

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// call runs module.fn(args...) protected and returns its results; a raised
// error fails the test.
func call(t *testing.T, L *lua.LState, module, fn string, args ...lua.LValue) []lua.LValue {
	t.Helper()
	f := L.GetGlobal(module).(*lua.LTable).RawGetString(fn)
	top := L.GetTop()
	if err := L.CallByParam(lua.P{Fn: f, NRet: lua.MultRet, Protect: true}, args...); err != nil {
		t.Fatalf("%s.%s raised: %v", module, fn, err)
	}
	rets := make([]lua.LValue, 0, L.GetTop()-top)
	for i := top + 1; i <= L.GetTop(); i++ {
		rets = append(rets, L.Get(i))
	}
	L.SetTop(top)
	return rets
}

// FuzzURL: the url wrappers never raise on any string; encode/decode and
// query/parse round-trip; a parsed URL rebuilt parses to the same scheme,
// host and port.
func FuzzURL(f *testing.F) {
	for _, s := range []string{"https://ann:pw@example.com:8443/p/a%20b?x=1&y=2&y=3#frag", "http://[::1]:80/", ":nope",
		"/a/b?c", "mailto:x@y", "http://h/%zz", "//host/path", "a:b", "?q=%", "http://a b/", "https://h:99999/"} {
		f.Add(s, "key")
	}
	f.Fuzz(func(t *testing.T, s, key string) {
		L, _ := newLua(t, nil)
		ls := lua.LString(s)
		if got := call(t, L, "url", "decode", call(t, L, "url", "encode", ls)[0]); len(got) != 1 || got[0] != ls {
			t.Fatalf("decode(encode(%q)) = %v", s, got)
		}
		if key != "" {
			q := L.NewTable()
			q.RawSetString(key, ls)
			text := call(t, L, "url", "query", q)[0]
			parsed := call(t, L, "url", "parse", lua.LString("?"+string(text.(lua.LString))))
			if v := parsed[0].(*lua.LTable).RawGetString("query").(*lua.LTable).RawGetString(key); v != ls {
				t.Fatalf("query {%q = %q} = %s, read back as %v", key, s, text, v)
			}
		}
		parsed := call(t, L, "url", "parse", ls)
		u, ok := parsed[0].(*lua.LTable)
		if !ok {
			if len(parsed) != 2 || !strings.HasPrefix(parsed[1].String(), "url: ") {
				t.Fatalf("parse(%q) = %v, want a table or nil, message", s, parsed)
			}
			return
		}
		if u.RawGetString("host") == lua.LNil || u.RawGetString("scheme") == lua.LNil {
			return
		}
		built := call(t, L, "url", "build", u)[0]
		again, ok := call(t, L, "url", "parse", built)[0].(*lua.LTable)
		if !ok {
			t.Fatalf("parse(%q) rebuilt as %q, which does not parse", s, built)
		}
		for _, k := range []string{"scheme", "host", "port"} {
			if a, b := u.RawGetString(k), again.RawGetString(k); a.String() != b.String() {
				t.Fatalf("parse(%q).%s = %v; rebuilt as %q, it is %v", s, k, a, built, b)
			}
		}
	})
}

// FuzzRe: the re wrappers never raise on any pattern and input; a pattern
// that does not compile is nil, "re: ..."; one that does agrees with Go's
// regexp.
func FuzzRe(f *testing.F) {
	for _, p := range [][2]string{{`(\w+)@(\w+)`, "ann@example"}, {`(`, "x"}, {`\d+`, "a1b22"}, {`(a+)+$`, "aaaaab"},
		{`(?i)x|(y)`, "XyY"}, {`$`, ""}, {`\p{Greek}+`, "αβγ"}, {`[`, "["}, {`a{2,1000}`, "aaa"}, {`\x{10FFFF}`, "\xff"},
		{strings.Repeat(`a{1000}`, 33), "a"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		L, _ := newLua(t, nil)
		lp, ls := lua.LString(pattern), lua.LString(s)
		re, err := regexp.Compile(pattern)
		if len(pattern) > maxRegexpLen {
			err = errors.New("too long") // refused before compiling
		} else if _, perr := newPattern(pattern); errors.Is(perr, errRegexpTooLarge) {
			err = perr // refused before compiling too
		}
		got := call(t, L, "re", "test", lp, ls)
		if err != nil {
			if len(got) != 2 || got[0] != lua.LNil || !strings.HasPrefix(got[1].String(), "re: ") {
				t.Fatalf("test(%q) = %v, want nil, re: ...", pattern, got)
			}
			return
		}
		if got[0] != lua.LBool(re.MatchString(s)) {
			t.Fatalf("test(%q, %q) = %v, regexp says %v", pattern, s, got[0], re.MatchString(s))
		}
		if m := call(t, L, "re", "match", lp, ls); (m[0] == lua.LNil) == re.MatchString(s) {
			t.Fatalf("match(%q, %q) = %v", pattern, s, m)
		}
		if all, ok := call(t, L, "re", "find_all", lp, ls, lua.LNumber(10))[0].(*lua.LTable); !ok || all.Len() > 10 {
			t.Fatalf("find_all(%q, %q, 10) = %v", pattern, s, all)
		}
		if r := call(t, L, "re", "replace", lp, ls, lua.LString("<$1>"))[0]; r.Type() != lua.LTString {
			t.Fatalf("replace(%q, %q) = %v", pattern, s, r)
		}
		if parts, ok := call(t, L, "re", "split", lp, ls, lua.LNumber(10))[0].(*lua.LTable); !ok || parts.Len() > 10 {
			t.Fatalf("split(%q, %q, 10) = %v", pattern, s, parts)
		}
		// The searches that watch the call's context find what regexp finds.
		p, err := newPattern(pattern)
		if err != nil {
			t.Fatalf("newPattern(%q): %v", pattern, err)
		}
		saved := riskyWork
		riskyWork = -1
		defer func() { riskyWork = saved }()
		L.SetContext(context.Background())
		if got, want := p.findAll(L, s, 10), re.FindAllStringSubmatch(s, 10); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("watched find_all(%q, %q) = %q, regexp %q", pattern, s, got, want)
		}
		if got, want := p.split(L, s, 10), re.Split(s, 10); !slices.Equal(got, want) {
			t.Fatalf("watched split(%q, %q) = %q, regexp %q", pattern, s, got, want)
		}
		if got, want := p.replace(L, s, "<$1>"), re.ReplaceAllString(s, "<$1>"); got != want {
			t.Fatalf("watched replace(%q, %q) = %q, regexp %q", pattern, s, got, want)
		}
	})
}

// FuzzFSResolve: a path the fs module accepts names, read lexically, a place
// inside the root it was matched to (never "data/../x" read as "x"), and
// that root grants the access asked for; any other path is refused. os.Root
// then confines the operation itself (symbolic links included): this is the
// check before it, on which the messages and the choice of root depend.
func FuzzFSResolve(f *testing.F) {
	dir := f.TempDir()
	for _, d := range []string{"data/out", "out"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	lib := newLib(f, dir, `{ read = { "data", "/etc" }, write = { "data/out", "out" } }`)
	for _, s := range []string{"data/a.txt", "data/../x", "data/out/../../etc/passwd", "/etc/passwd", "/etc/../root",
		"./data//a", "data/./sub/..", "..", "data/out", "out/../data/a", "data\x00x", dir + "/data/a", dir + "/../x", "", "/", "data/out/.."} {
		f.Add(s, false)
		f.Add(s, true)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path string, write bool) {
		need := readAccess
		if write {
			need = writeAccess
		}
		p, err := lib.resolve(path, need)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fs: ") {
				t.Fatalf("resolve(%q): message %q", path, err)
			}
			return
		}
		roots := lib.grants.Write
		if !write {
			roots = append(slices.Clone(roots), lib.grants.Read...)
		}
		if !slices.Contains(roots, p.root) {
			t.Fatalf("resolve(%q, write=%v) chose root %+v, not one granting that access", path, write, p.root)
		}
		if p.rel != "." && !filepath.IsLocal(p.rel) {
			t.Fatalf("resolve(%q) = %q in %s: not local", path, p.rel, p.root.Path)
		}
		full := path
		if !filepath.IsAbs(path) {
			full = abs + "/" + path
		}
		if got, want := filepath.Join(p.root.Path, p.rel), filepath.Clean(full); got != want {
			t.Fatalf("resolve(%q) = %s + %q = %s, but the path names %s", path, p.root.Path, p.rel, got, want)
		}
	})
}
