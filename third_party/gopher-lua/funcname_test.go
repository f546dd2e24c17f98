package lua

// patched for luamcp: NewNamedFunction (funcname.go).

import (
	"strings"
	"testing"
	"unsafe"
)

// TestFunctionSize checks that the name's field keeps an LFunction in the
// size class the budget charges for it (sizeFunction).
func TestFunctionSize(t *testing.T) {
	if got := unsafe.Sizeof(LFunction{}); got > sizeFunction {
		t.Errorf("an LFunction takes %d bytes, more than sizeFunction (%d)", got, sizeFunction)
	}
}

// TestNamedFunctionArgError checks how an argument error names a Go
// function: as its caller names it when it does (Lua 5.1), else by the name
// the host gave it; a function made by NewFunction is named as before.
func TestNamedFunctionArgError(t *testing.T) {
	check := func(L *LState) int { L.CheckString(1); return 0 }
	for _, tt := range []struct {
		name, code, want string
	}{
		{"field call", `lib.named()`, "bad argument #1 to 'named' (string expected, got no value)"},
		{"local alias", `local d = lib.named; d()`, "bad argument #1 to 'd' (string expected, got no value)"},
		{"tail call", `return lib.named()`, "bad argument #1 to 'named' (string expected, got no value)"},
		{"method, bad self", `lib:named()`, "calling 'named' on bad self (string expected, got table)"},
		{"called by pcall", `local ok, err = pcall(lib.named); error(err, 0)`, "bad argument #1 to 'lib.named' (string expected, got no value)"},
		{"called by a metamethod", `local t = setmetatable({}, {__index = lib.named}); return t.x`, "bad argument #1 to 'lib.named' (string expected, got table)"},
		{"expression", `local t = {lib.named}; t[1]()`, "bad argument #1 to 'lib.named' (string expected, got no value)"},
		{"bottom of a coroutine", `coroutine.wrap(lib.named)()`, "bad argument #1 to 'lib.named' (string expected, got no value)"},
		{"unnamed, called by pcall", `local ok, err = pcall(lib.plain); error(err, 0)`, "bad argument #1 to '(anonymous)' (string expected, got no value)"},
		{"unnamed, expression", `local t = {lib.plain}; t[1]()`, "bad argument #1 to '?' (string expected, got no value)"},
		{"library, called by pcall", `local ok, err = pcall(string.rep); error(err, 0)`, "bad argument #1 to '(anonymous)' (string expected, got no value)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			L := NewState()
			defer L.Close()
			lib := L.NewTable()
			lib.RawSetString("named", L.NewNamedFunction("lib.named", check))
			lib.RawSetString("plain", L.NewFunction(check))
			L.SetGlobal("lib", lib)
			err := L.DoString(tt.code)
			if err == nil {
				t.Fatal("no error")
			}
			if got := err.(*ApiError).Object.String(); !strings.HasSuffix(got, tt.want) {
				t.Errorf("got %q, want it to end with %q", got, tt.want)
			}
		})
	}
	// Called from Go as the bottom frame: not "main chunk", in the message
	// nor in the traceback.
	L := NewState()
	defer L.Close()
	L.Push(L.NewNamedFunction("lib.named", check))
	err := L.PCall(0, 0, nil)
	for _, want := range []string{
		"bad argument #1 to 'lib.named' (string expected, got no value)",
		"[G]: in function 'lib.named'",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("PCall from Go: %v, want %q", err, want)
		}
	}
}

// TestNamedFunctionTraceback checks a traceback's line of a Go function its
// caller does not name.
func TestNamedFunctionTraceback(t *testing.T) {
	L := NewState()
	defer L.Close()
	L.SetGlobal("named", L.NewNamedFunction("lib.named", func(L *LState) int { L.CheckString(1); return 0 }))
	L.SetGlobal("plain", L.NewFunction(func(L *LState) int { L.CheckString(1); return 0 }))
	for code, want := range map[string]string{
		`named()`: "[G]: in function 'named'",
		`local _ = setmetatable({}, {__index = named}).x`: "[G]: in function 'lib.named'",
		`local _ = setmetatable({}, {__index = plain}).x`: "[G]: in function (anonymous)",
	} {
		err := L.DoString(code)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", code, err, want)
		}
	}
}
