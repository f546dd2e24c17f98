package lua

// This file is patched for luamcp: Go functions a host names.

// NewNamedFunction is NewFunction for a function the host knows by name
// (a library's "json.decode"). Its frame is named so (in an argument error,
// a traceback) when its caller gives it no name, as in pcall(json.decode):
// it was "bad argument #1 to '(anonymous)'" there, and "[G]: in function
// (anonymous)" in the traceback. Lua 5.2 names a library function the same
// way (luaL_argerror's pushglobalfuncname: 'string.rep'). The name is the
// host's text, shown to scripts as it is.
func (ls *LState) NewNamedFunction(name string, fn LGFunction) *LFunction {
	ls.count(sizeFunction + sizeString)
	f := newLFunctionG(fn, ls.currentEnv(), 0)
	f.gname = &name
	return f
}

// namedFrameFuncName is frameFuncName, but for a function NewNamedFunction
// made whose caller gives it no name (a Go caller such as pcall, a
// metamethod, the bottom frame of a thread or of a host's call, an
// expression such as t[1]()): that is named by the host's name. A caller's
// name wins, as in Lua 5.1: json.decode() is 'decode', local d =
// json.decode; d() is 'd'.
func (ls *LState) namedFrameFuncName(fr *callFrame) (string, bool) {
	name, bottom := ls.frameFuncName(fr)
	// frameFuncName's names for a Go function its caller did not name.
	if fr.Fn.IsG && fr.Fn.gname != nil && (bottom || name == "?" || name == "(anonymous)") {
		return *fr.Fn.gname, false
	}
	return name, bottom
}
