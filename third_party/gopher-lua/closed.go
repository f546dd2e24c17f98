package lua

// Patched for luamcp: a static check of what a function can observe.
//
// luamcp reuses the result of a script's tools() (and the other list
// functions) when the function provably returns the same thing every time.
// Closed is that proof for the simplest and most common case: a function
// that builds its result from constants alone.

// Closed reports whether a call of the function can observe nothing but its
// arguments and its constants: it reads and writes no upvalue and no global,
// calls nothing (CALL, TAILCALL, SELF, TFORLOOP), makes no closure and takes
// no varargs. usesArgs reports whether an instruction names a parameter's
// register. A closed function that does not use its arguments computes its
// results from constants and the tables it makes: every call returns equal
// values (fresh tables with the same contents), or fails the same way, up to
// its state's memory limit and its context.
func (fp *FunctionProto) Closed() (closed, usesArgs bool) {
	np := int(fp.NumParameters)
	reg := func(r int) {
		if r < np {
			usesArgs = true
		}
	}
	rk := func(r int) {
		if !opIsK(r) {
			reg(r)
		}
	}
	span := func(from, to int) { // registers from..to
		if from < np && to >= from {
			usesArgs = true
		}
	}
	if fp.IsVarArg != 0 {
		return false, false
	}
	for pc := 0; pc < len(fp.Code); pc++ {
		inst := fp.Code[pc]
		a, b, c := opGetArgA(inst), opGetArgB(inst), opGetArgC(inst)
		switch opGetOpCode(inst) {
		case OP_MOVE:
			reg(a)
			reg(b)
		case OP_MOVEN:
			reg(a)
			reg(b)
			// C more MOVEs follow as instructions of their own.
		case OP_LOADK, OP_LOADBOOL, OP_NEWTABLE, OP_TEST, OP_CLOSE:
			reg(a)
		case OP_LOADNIL:
			span(a, b)
		case OP_GETTABLE, OP_GETTABLEKS:
			reg(a)
			reg(b)
			rk(c)
		case OP_SETTABLE, OP_SETTABLEKS:
			reg(a)
			rk(b)
			rk(c)
		case OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_POW:
			reg(a)
			rk(b)
			rk(c)
		case OP_EQ, OP_LT, OP_LE:
			rk(b)
			rk(c)
		case OP_UNM, OP_NOT, OP_LEN, OP_TESTSET:
			reg(a)
			reg(b)
		case OP_CONCAT:
			reg(a)
			span(b, c)
		case OP_JMP, OP_NOP:
		case OP_FORLOOP, OP_FORPREP:
			span(a, a+3)
		case OP_SETLIST:
			span(a, a+b)
			if b == 0 {
				span(a, 255)
			}
			if c == 0 {
				pc++ // the next word is C itself, not an instruction
			}
		case OP_RETURN:
			if b == 0 {
				span(a, 255)
			} else {
				span(a, a+b-2)
			}
		default: // GETUPVAL, GETGLOBAL, SETGLOBAL, SETUPVAL, SELF, CALL, TAILCALL, TFORLOOP, CLOSURE, VARARG
			return false, false
		}
	}
	return true, usesArgs
}
