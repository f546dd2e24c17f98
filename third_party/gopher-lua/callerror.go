package lua

// patched for luamcp: the error of calling a value that is not a function
// names what the code called, as Lua does ("attempt to call 'handler' (a
// nil value)"). Upstream said "attempt to call a non-function object" for
// every such call, the runtime error a script author meets most, with
// nothing to tell which call of the line failed.

// callError raises the error of calling lv from the current frame.
func (ls *LState) callError(lv LValue) {
	if name := ls.calleeName(); name != "" {
		ls.RaiseError("attempt to call '%s' (a %s value)", name, lv.Type().String())
	}
	ls.RaiseError("attempt to call a %s value", lv.Type().String())
}

// calleeName is the name the compiler recorded for the call instruction
// the current Lua frame is running ("" for a Go frame, or a call of an
// expression: (f or g)()).
func (ls *LState) calleeName() string {
	cf := ls.currentFrame
	if cf == nil || cf.Fn == nil || cf.Fn.IsG || cf.Pc == 0 {
		return ""
	}
	pc := cf.Pc - 1
	for _, call := range cf.Fn.Proto.DbgCalls {
		if call.Pc == pc {
			if call.Name == "?" {
				return ""
			}
			return call.Name
		}
	}
	return ""
}
