package hostlib

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/bridge"
	lua "github.com/yuin/gopher-lua"
)

// luaPrelude gives test chunks eq(got, want [, what]), which raises with
// both values when they differ, and fails(f, ...), which returns the message
// f raised.
const luaPrelude = `
function eq(got, want, what)
  if got ~= want then
    error(string.format("%s: got %s, want %s", what or "value", tostring(got), tostring(want)), 2)
  end
end
function fails(f, ...)
  local ok, err = pcall(f, ...)
  if ok then error("did not raise", 2) end
  return tostring(err)
end
`

// newLua returns a Lua state where every host module is a global, its
// capability modules granted lib (nil: none, as while a chunk runs).
func newLua(t testing.TB, lib *Lib) (*lua.LState, *State) {
	t.Helper()
	L := lua.NewState()
	t.Cleanup(L.Close)
	s := &State{}
	s.Init(L, bridge.NewCodec(L))
	if lib != nil {
		s.Grant(lib)
	}
	for name := range modules {
		mod, ok := s.Open(name)
		if !ok {
			t.Fatalf("Open(%q) failed", name)
		}
		L.SetGlobal(name, mod)
	}
	if _, ok := s.Open("nope"); ok {
		t.Fatal(`Open("nope") succeeded`)
	}
	if err := L.DoString(luaPrelude); err != nil {
		t.Fatal(err)
	}
	return L, s
}

// luaCase is Lua code that must run without error.
type luaCase struct {
	name string
	code string
}

func runCases(t *testing.T, L *lua.LState, cases []luaCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := L.DoString(c.code); err != nil {
				t.Errorf("%s", strings.TrimSpace(err.Error()))
			}
			L.SetTop(0)
		})
	}
}

func lstr(s string) lua.LString { return lua.LString(s) }

// newLib returns a library for the grants the Lua table allow gives, with
// dir as the scripts folder.
func newLib(t testing.TB, dir, allow string) *Lib {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	if err := L.DoString("return " + allow); err != nil {
		t.Fatal(err)
	}
	g, err := ParseAllow(L.Get(-1), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	lib := New(Config{Grants: g, Dir: dir})
	t.Cleanup(lib.Close)
	return lib
}

func mkfile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
