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

// patched for luamcp: the errors of arithmetic, concatenation and comparison
// say what Lua 5.1 says (luaG_aritherror, luaG_concaterror,
// luaG_ordererror), naming the operand at fault. Upstream said "cannot
// perform add operation between nil and number", which no Lua manual or
// tutorial a script author searches uses.

// arithError raises the error of arithmetic on lhs and rhs, at least one of
// which is no number nor a string that converts to one: the first such.
func (ls *LState) arithError(lhs, rhs LValue) {
	bad := rhs
	if !convertsToNumber(lhs) {
		bad = lhs
	}
	ls.RaiseError("attempt to perform arithmetic on a %s value", bad.Type().String())
}

// convertsToNumber reports whether arithmetic takes lv: a number, or a
// string that reads as one.
func convertsToNumber(lv LValue) bool {
	switch v := lv.(type) {
	case LNumber:
		return true
	case LString:
		_, ok := str2number(string(v))
		return ok
	}
	return false
}

// concatError raises the error of concatenating lhs and rhs, at least one
// of which is neither a string nor a number: the first such.
func (ls *LState) concatError(lhs, rhs LValue) {
	bad := lhs
	if LVCanConvToString(lhs) {
		bad = rhs
	}
	ls.RaiseError("attempt to concatenate a %s value", bad.Type().String())
}

// compareError raises the error of ordering lhs and rhs (<, <=, >, >=).
func (ls *LState) compareError(lhs, rhs LValue) {
	lt, rt := lhs.Type().String(), rhs.Type().String()
	if lt == rt {
		ls.RaiseError("attempt to compare two %s values", lt)
	}
	ls.RaiseError("attempt to compare %s with %s", lt, rt)
}
