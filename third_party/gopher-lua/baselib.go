package lua

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
)

/* basic functions {{{ */

func OpenBase(L *LState) int {
	global := L.Get(GlobalsIndex).(*LTable)
	L.SetGlobal("_G", global)
	L.SetGlobal("_VERSION", LString(LuaVersion))
	L.SetGlobal("_GOPHER_LUA_VERSION", LString(PackageName+" "+PackageVersion))
	basemod := L.RegisterModule("_G", baseFuncs)
	global.RawSetString("ipairs", L.NewClosure(baseIpairs, L.NewFunction(ipairsaux)))
	global.RawSetString("pairs", L.NewClosure(basePairs, L.NewFunction(pairsaux)))
	L.Push(basemod)
	return 1
}

var baseFuncs = map[string]LGFunction{
	"assert":         baseAssert,
	"collectgarbage": baseCollectGarbage,
	"dofile":         baseDoFile,
	"error":          baseError,
	"gcinfo":         baseGcinfo, // patched for luamcp
	"getfenv":        baseGetFEnv,
	"getmetatable":   baseGetMetatable,
	"load":           baseLoad,
	"loadfile":       baseLoadFile,
	"loadstring":     baseLoadString,
	"next":           baseNext,
	"pcall":          basePCall,
	"print":          basePrint,
	"rawequal":       baseRawEqual,
	"rawget":         baseRawGet,
	"rawset":         baseRawSet,
	"select":         baseSelect,
	"_printregs":     base_PrintRegs,
	"setfenv":        baseSetFEnv,
	"setmetatable":   baseSetMetatable,
	"tonumber":       baseToNumber,
	"tostring":       baseToString,
	"type":           baseType,
	"unpack":         baseUnpack,
	"xpcall":         baseXPCall,
	// loadlib
	"module":  loModule,
	"require": loRequire,
	// hidden features
	"newproxy": baseNewProxy,
}

// patched for luamcp: as Lua 5.1's luaB_assert, a first argument is
// required and the message may be a number. Upstream's assert() was
// "assertion failed!" and assert(false, 42) an argument error.
func baseAssert(L *LState) int {
	L.CheckAny(1)
	if !L.ToBool(1) {
		L.RaiseError("%s", L.OptString(2, "assertion failed!"))
		return 0
	}
	return L.GetTop()
}

func baseCollectGarbage(L *LState) int {
	runtime.GC()
	return 0
}

// baseGcinfo is Lua 5.1's gcinfo (Lua 5.0's, kept): the memory the state
// holds, in KiB, here as its memory budget counts it (budget.go). Patched
// for luamcp: upstream had no gcinfo.
func baseGcinfo(L *LState) int {
	L.Push(LNumber(L.G.budget.used >> 10))
	return 1
}

func baseDoFile(L *LState) int {
	src := L.ToString(1)
	top := L.GetTop()
	fn, err := L.LoadFile(src)
	if err != nil {
		L.Push(LString(err.Error()))
		L.Panic(L)
	}
	L.Push(fn)
	L.Call(0, MultRet)
	return L.GetTop() - top
}

// patched for luamcp: as Lua 5.1's luaB_error, error() raises nil (upstream:
// "bad argument #1 to error (value expected)"), and a number message gets
// the position as a string does (error(42) raises "chunk:1: 42").
func baseError(L *LState) int {
	obj := L.Get(1)
	level := L.OptInt(2, 1)
	if n, ok := obj.(LNumber); ok && level > 0 {
		obj = LString(n.String())
	}
	L.Error(obj, level)
	return 0
}

func baseGetFEnv(L *LState) int {
	var value LValue
	if L.GetTop() == 0 {
		value = LNumber(1)
	} else {
		value = L.Get(1)
	}

	if fn, ok := value.(*LFunction); ok {
		if !fn.IsG {
			L.Push(fn.Env)
		} else {
			L.Push(L.G.Global)
		}
		return 1
	}

	if number, ok := value.(LNumber); ok {
		level := int(float64(number))
		if level <= 0 {
			L.Push(L.Env)
		} else {
			cf := L.currentFrame
			for i := 0; i < level && cf != nil; i++ {
				cf = cf.Parent
			}
			if cf == nil || cf.Fn.IsG {
				L.Push(L.G.Global)
			} else {
				L.Push(cf.Fn.Env)
			}
		}
		return 1
	}

	L.Push(L.G.Global)
	return 1
}

func baseGetMetatable(L *LState) int {
	L.Push(L.GetMetatable(L.CheckAny(1)))
	return 1
}

func ipairsaux(L *LState) int {
	tb := L.CheckTable(1)
	i := L.CheckInt(2)
	i++
	v := tb.RawGetInt(i)
	if v == LNil {
		return 0
	} else {
		L.Pop(1)
		L.Push(LNumber(i))
		L.Push(LNumber(i))
		L.Push(v)
		return 2
	}
}

func baseIpairs(L *LState) int {
	tb := L.CheckTable(1)
	L.Push(L.Get(UpvalueIndex(1)))
	L.Push(tb)
	L.Push(LNumber(0))
	return 3
}

func loadaux(L *LState, reader io.Reader, chunkname string) int {
	if fn, err := L.Load(reader, chunkname); err != nil {
		L.Push(LNil)
		L.Push(LString(err.Error()))
		return 2
	} else {
		L.Push(fn)
		return 1
	}
}

// loadNamed is loadaux for load and loadstring, which show the chunk's name
// as Lua 5.1 does (ChunkID) and keep it as given for debug.getinfo's source.
// Patched for luamcp.
func loadNamed(L *LState, reader io.Reader, chunkname string) int {
	n := loadaux(L, reader, ChunkID(chunkname))
	if fn, ok := L.Get(-1).(*LFunction); ok && n == 1 && fn.Proto != nil {
		fn.Proto.setChunkName(&chunkname)
	}
	return n
}

func baseLoad(L *LState) int {
	fn := L.CheckFunction(1)
	chunkname := L.OptString(2, "=(load)") // patched for luamcp: as Lua 5.1 (upstream: "?")
	top := L.GetTop()
	buf := []string{}
	for {
		L.SetTop(top)
		L.Push(fn)
		L.Call(0, 1)
		ret := L.reg.Pop()
		if ret == LNil {
			break
		} else if LVCanConvToString(ret) {
			str := ret.String()
			if len(str) > 0 {
				buf = append(buf, string(str))
			} else {
				break
			}
		} else {
			L.Push(LNil)
			L.Push(LString("reader function must return a string"))
			return 2
		}
	}
	return loadNamed(L, strings.NewReader(strings.Join(buf, "")), chunkname) // patched for luamcp
}

func baseLoadFile(L *LState) int {
	var reader io.Reader
	var chunkname string
	var err error
	if L.GetTop() < 1 {
		reader = os.Stdin
		chunkname = "<stdin>"
	} else {
		chunkname = L.CheckString(1)
		reader, err = os.Open(chunkname)
		if err != nil {
			L.Push(LNil)
			L.Push(LString(fmt.Sprintf("can not open file: %v", chunkname)))
			return 2
		}
		defer reader.(*os.File).Close()
	}
	return loadaux(L, reader, chunkname)
}

// patched for luamcp: the chunk is named as Lua 5.1 names it (ChunkID): by
// default "[string \"first line...\"]", "=name" is name and "@file" file
// (upstream: "<string>", or the name as given).
func baseLoadString(L *LState) int {
	s := L.CheckString(1)
	return loadNamed(L, strings.NewReader(s), L.OptString(2, s))
}

// luaIDSize is Lua 5.1's LUA_IDSIZE, the size of a chunk's shown name with
// its C string's NUL.
const luaIDSize = 60

// ChunkID is the name Lua 5.1 shows for a chunk loaded under the name
// source (luaO_chunkid), in error positions and tracebacks: "=name" is name
// (at most 59 bytes), "@file" is file (its last 52 bytes after "..." when
// longer), and any other source, the text itself for loadstring, is
// [string "its first line"], cut at 43 bytes, or at a line break, with "...".
// As in C, the name ends at a NUL byte. Patched for luamcp.
func ChunkID(source string) string {
	if i := strings.IndexByte(source, 0); i >= 0 {
		source = source[:i]
	}
	switch {
	case strings.HasPrefix(source, "="):
		return source[1:min(len(source), luaIDSize)]
	case strings.HasPrefix(source, "@"):
		source = source[1:]
		if keep := luaIDSize - len(" '...' ") - 1; len(source) > keep {
			return "..." + source[len(source)-keep:]
		}
		return source
	}
	n := strings.IndexAny(source, "\n\r")
	if n < 0 {
		n = len(source)
	}
	n = min(n, luaIDSize-len(" [string \"...\"] ")-1)
	if n < len(source) {
		return "[string \"" + source[:n] + "...\"]"
	}
	return "[string \"" + source + "\"]"
}

// patched for luamcp: a key the table does not hold is "invalid key to
// 'next'", as Lua 5.1's luaH_next (upstream went on after the table's first
// key, or returned nil).
func baseNext(L *LState) int {
	tb := L.CheckTable(1)
	index := LNil
	if L.GetTop() >= 2 {
		index = L.Get(2)
	}
	if !tb.holdsKey(index) {
		L.RaiseError("invalid key to 'next'")
	}
	key, value := tb.Next(index)
	if key == LNil {
		L.Push(LNil)
		return 1
	}
	L.Push(key)
	L.Push(value)
	return 2
}

func pairsaux(L *LState) int {
	tb := L.CheckTable(1)
	key, value := tb.Next(L.Get(2))
	if key == LNil {
		return 0
	} else {
		L.Pop(1)
		L.Push(key)
		L.Push(key)
		L.Push(value)
		return 2
	}
}

func basePairs(L *LState) int {
	tb := L.CheckTable(1)
	L.Push(L.Get(UpvalueIndex(1)))
	L.Push(tb)
	L.Push(LNil)
	return 3
}

func basePCall(L *LState) int {
	L.CheckAny(1)
	v := L.Get(1)
	if v.Type() != LTFunction && L.GetMetaField(v, "__call").Type() != LTFunction {
		L.Push(LFalse)
		L.Push(LString("attempt to call a " + v.Type().String() + " value"))
		return 2
	}
	nargs := L.GetTop() - 1
	if err := L.PCall(nargs, MultRet, nil); err != nil {
		L.Push(LFalse)
		if aerr, ok := err.(*ApiError); ok {
			L.Push(aerr.Object)
		} else {
			L.Push(LString(err.Error()))
		}
		return 2
	} else {
		L.Insert(LTrue, 1)
		return L.GetTop()
	}
}

func basePrint(L *LState) int {
	top := L.GetTop()
	for i := 1; i <= top; i++ {
		fmt.Print(L.ToStringMeta(L.Get(i)).String())
		if i != top {
			fmt.Print("\t")
		}
	}
	fmt.Println("")
	return 0
}

func base_PrintRegs(L *LState) int {
	L.printReg()
	return 0
}

func baseRawEqual(L *LState) int {
	if L.CheckAny(1) == L.CheckAny(2) {
		L.Push(LTrue)
	} else {
		L.Push(LFalse)
	}
	return 1
}

func baseRawGet(L *LState) int {
	L.Push(L.RawGet(L.CheckTable(1), L.CheckAny(2)))
	return 1
}

func baseRawSet(L *LState) int {
	tb := L.CheckTable(1)
	L.RawSet(tb, L.CheckAny(2), L.CheckAny(3))
	L.Push(tb) // patched for luamcp: rawset returns its table, as Lua 5.1's luaB_rawset
	return 1
}

// patched for luamcp: as Lua 5.1's luaB_select, a string starting with '#'
// counts, and any other index is read as an integer (a string that reads as
// a number included: select("2", ...)). Upstream refused every string but
// "#".
func baseSelect(L *LState) int {
	num := L.GetTop()
	if s, ok := L.Get(1).(LString); ok && strings.HasPrefix(string(s), "#") {
		L.Push(LNumber(num - 1))
		return 1
	}
	idx := L.CheckInt64(1)
	if idx < 0 {
		idx = int64(num) + idx
	} else if idx > int64(num) {
		idx = int64(num)
	}
	if 1 > idx {
		L.ArgError(1, "index out of range")
	}
	return num - int(idx)
}

func baseSetFEnv(L *LState) int {
	var value LValue
	if L.GetTop() == 0 {
		value = LNumber(1)
	} else {
		value = L.Get(1)
	}
	env := L.CheckTable(2)

	if fn, ok := value.(*LFunction); ok {
		if fn.IsG {
			L.RaiseError("cannot change the environment of given object")
		} else {
			fn.Env = env
			L.Push(fn)
			return 1
		}
	}

	if number, ok := value.(LNumber); ok {
		level := int(float64(number))
		if level <= 0 {
			L.Env = env
			return 0
		}

		cf := L.currentFrame
		for i := 0; i < level && cf != nil; i++ {
			cf = cf.Parent
		}
		if cf == nil || cf.Fn.IsG {
			L.RaiseError("cannot change the environment of given object")
		} else {
			cf.Fn.Env = env
			L.Push(cf.Fn)
			return 1
		}
	}

	L.RaiseError("cannot change the environment of given object")
	return 0
}

// patched for luamcp: as Lua 5.1's luaB_setmetatable, the object is a table
// and the metatable argument is required. Upstream set the metatable of any
// value: setmetatable("", mt) replaced every string's, setmetatable(1, mt)
// gave numbers one (debug.setmetatable's business in Lua).
func baseSetMetatable(L *LState) int {
	L.CheckTable(1)
	if L.GetTop() < 2 {
		L.ArgError(2, "nil or table expected")
	}
	L.CheckTypes(2, LTNil, LTTable)
	obj := L.Get(1)
	mt := L.Get(2)
	if m := L.metatable(obj, true); m != LNil {
		if tb, ok := m.(*LTable); ok && tb.RawGetString("__metatable") != LNil {
			L.RaiseError("cannot change a protected metatable")
		}
	}
	L.SetMetatable(obj, mt)
	L.SetTop(1)
	return 1
}

// baseToNumber is tonumber (patched for luamcp: Lua 5.1's, see number.go):
// without a base or in base 10, a number stays itself and a string converts
// as arithmetic converts it; in another base (2 to 36, else an argument
// error) a string, or a number's text, is read as Lua 5.2 reads it.
func baseToNumber(L *LState) int {
	base := L.OptInt(2, 10)
	if base == 10 {
		switch lv := L.CheckAny(1).(type) {
		case LNumber:
			L.Push(lv)
		case LString:
			if v, ok := str2number(string(lv)); ok {
				L.Push(v)
			} else {
				L.Push(LNil)
			}
		default:
			L.Push(LNil)
		}
		return 1
	}
	if base < 2 || base > 36 {
		L.ArgError(2, "base out of range")
	}
	if v, ok := str2numberBase(L.CheckString(1), base); ok {
		L.Push(v)
	} else {
		L.Push(LNil)
	}
	return 1
}

func baseToString(L *LState) int {
	v1 := L.CheckAny(1)
	L.Push(L.ToStringMeta(v1))
	return 1
}

func baseType(L *LState) int {
	L.Push(LString(L.CheckAny(1).Type().String()))
	return 1
}

func baseUnpack(L *LState) int {
	tb := L.CheckTable(1)
	start := L.OptInt(2, 1)
	end := L.OptInt(3, tb.Len())
	// patched for luamcp: the count is computed without overflow, as Lua
	// 5.1 does. Upstream returned end - start + 1 when it was not negative:
	// with end far below start (NaN, -2^63 or 2^63 convert to the least
	// int) it wrapped to a huge count of values the loop never pushed, and
	// the caller copied them from past the value stack (unpack({}, 2, 0/0):
	// index out of range, a Go panic).
	if start > end {
		return 0
	}
	// patched for luamcp: so are more values than the value stack can
	// take, as Lua 5.1's lua_checkstack refuses them (it was the VM's
	// "registry overflow").
	if uint64(end-start) >= math.MaxInt32 || !L.reg.canHold(end-start+1) { // exact: start <= end
		L.RaiseError("too many results to unpack")
	}
	for i := start; i <= end; i++ {
		L.Push(tb.RawGetInt(i))
	}
	return end - start + 1
}

// errInErrorHandling is the error of a message handler that fails, Lua 5.1's
// LUA_ERRERR.
const errInErrorHandling = "error in error handling"

// patched for luamcp: as Lua 5.1's luaB_xpcall, the function and the handler
// may be any values (upstream required functions): calling a value that is
// not a function is an error the handler gets, and an error with a handler
// that is not a function, or one raised inside the handler, is "error in
// error handling" (pcall).
func baseXPCall(L *LState) int {
	L.CheckAny(2)
	fn := L.Get(1)
	errfunc, _ := L.Get(2).(*LFunction)

	top := L.GetTop()
	L.Push(fn)
	if err := L.pcall(0, MultRet, errfunc, true); err != nil {
		L.Push(LFalse)
		if errfunc == nil && L.contextErr() == nil {
			L.Push(LString(errInErrorHandling))
		} else if aerr, ok := err.(*ApiError); ok {
			L.Push(aerr.Object)
		} else {
			L.Push(LString(err.Error()))
		}
		return 2
	} else {
		L.Insert(LTrue, top+1)
		return L.GetTop() - top
	}
}

/* }}} */

/* load lib {{{ */

func loModule(L *LState) int {
	name := L.CheckString(1)
	loaded := L.GetField(L.Get(RegistryIndex), "_LOADED")
	tb := L.GetField(loaded, name)
	if _, ok := tb.(*LTable); !ok {
		tb = L.FindTable(L.Get(GlobalsIndex).(*LTable), name, 1)
		if tb == LNil {
			L.RaiseError("name conflict for module: %v", name)
		}
		L.SetField(loaded, name, tb)
	}
	if L.GetField(tb, "_NAME") == LNil {
		L.SetField(tb, "_M", tb)
		L.SetField(tb, "_NAME", LString(name))
		names := strings.Split(name, ".")
		pname := ""
		if len(names) > 1 {
			pname = strings.Join(names[:len(names)-1], ".") + "."
		}
		L.SetField(tb, "_PACKAGE", LString(pname))
	}

	caller := L.currentFrame.Parent
	if caller == nil {
		L.RaiseError("no calling stack.")
	} else if caller.Fn.IsG {
		L.RaiseError("module() can not be called from GFunctions.")
	}
	L.SetFEnv(caller.Fn, tb)

	top := L.GetTop()
	for i := 2; i <= top; i++ {
		L.Push(L.Get(i))
		L.Push(tb)
		L.Call(1, 0)
	}
	L.Push(tb)
	return 1
}

var loopdetection = &LUserData{}

func loRequire(L *LState) int {
	name := L.CheckString(1)
	loaded := L.GetField(L.Get(RegistryIndex), "_LOADED")
	lv := L.GetField(loaded, name)
	if LVAsBool(lv) {
		if lv == loopdetection {
			L.RaiseError("loop or previous error loading module: %s", name)
		}
		L.Push(lv)
		return 1
	}
	loaders, ok := L.GetField(L.Get(RegistryIndex), "_LOADERS").(*LTable)
	if !ok {
		L.RaiseError("package.loaders must be a table")
	}
	messages := []string{}
	var modasfunc LValue
	for i := 1; ; i++ {
		loader := L.RawGetInt(loaders, i)
		if loader == LNil {
			L.RaiseError("module %s not found:\n\t%s, ", name, strings.Join(messages, "\n\t"))
		}
		L.Push(loader)
		L.Push(LString(name))
		L.Call(1, 1)
		ret := L.reg.Pop()
		switch retv := ret.(type) {
		case *LFunction:
			modasfunc = retv
			goto loopbreak
		case LString:
			messages = append(messages, string(retv))
		}
	}
loopbreak:
	L.SetField(loaded, name, loopdetection)
	L.Push(modasfunc)
	L.Push(LString(name))
	L.Call(1, 1)
	ret := L.reg.Pop()
	modv := L.GetField(loaded, name)
	if ret != LNil && modv == loopdetection {
		L.SetField(loaded, name, ret)
		L.Push(ret)
	} else if modv == loopdetection {
		L.SetField(loaded, name, LTrue)
		L.Push(LTrue)
	} else {
		L.Push(modv)
	}
	return 1
}

/* }}} */

/* hidden features {{{ */

func baseNewProxy(L *LState) int {
	ud := L.NewUserData()
	L.SetTop(1)
	if L.Get(1) == LTrue {
		L.SetMetatable(ud, L.NewTable())
	} else if d, ok := L.Get(1).(*LUserData); ok {
		L.SetMetatable(ud, L.GetMetatable(d))
	}
	L.Push(ud)
	return 1
}

/* }}} */

//
