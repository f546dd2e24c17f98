package luavm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/luamcp/luamcp/internal/logcap"
)

// Bounds of every state, so that runaway recursion or a flood of values is a
// Lua error rather than a crash of the process.
const (
	callStackSize    = 200      // nested Lua and Go calls
	registrySize     = 256      // initial value stack slots (4 KiB: every idle session keeps them)
	registryMaxSize  = 64 << 10 // value stack slots at most (1 MiB)
	registryGrowStep = 2048     // gopher-lua grows linearly: few, large steps
)

// removedGlobals are the base functions a script does not get: file access,
// the garbage collector (collectgarbage, and Lua 5.0's gcinfo, which Lua 5.1
// keeps), environments, the package system's module(), and gopher-lua's
// debugging aids.
var removedGlobals = []string{
	"dofile", "loadfile", "collectgarbage", "gcinfo", "getfenv", "setfenv", "module",
	"require", "_printregs", "newproxy",
}

// sandbox opens exactly the libraries of script-api.md "Sandbox": base
// (trimmed), string, table, math, os.time/clock/date and coroutine, with
// print, load, loadstring and require replaced, plus the `mcp` module. There
// is no io, debug or channel library.
//
// The library tables are the state's own, but the Go functions in them are
// built once per process and shared (sharedLibs): they hold no state, and
// every state saves their allocation.
func (v *vm) sandbox() {
	L := v.L
	G := L.G.Global
	libs := sharedLibs()
	tables := make([]*lua.LTable, len(libs.tables))
	for i, lt := range libs.tables {
		tables[i] = L.CreateTable(0, len(lt.entries))
	}
	value := func(e libEntry) lua.LValue {
		switch {
		case e.table == libGlobals:
			return G
		case e.table >= 0:
			return tables[e.table]
		}
		return e.value
	}
	for i, lt := range libs.tables {
		for _, e := range lt.entries {
			tables[i].RawSetString(e.name, value(e))
		}
	}
	for _, e := range libs.globals {
		G.RawSetString(e.name, value(e))
	}
	// Strings index the string library (("x"):upper()).
	L.SetMetatable(lua.LString(""), tables[libs.str])

	G.RawSetString("print", L.NewFunction(v.print))
	G.RawSetString("load", L.NewFunction(v.load))
	G.RawSetString("loadstring", L.NewFunction(v.loadstring))

	v.loaded = L.CreateTable(0, 8)
	for _, name := range []string{"string", "table", "math", "os", "coroutine"} {
		v.loaded.RawSetString(name, G.RawGetString(name))
	}
	v.loaded.RawSetString("_G", G)
	mcp := v.mod.Table()
	mcp.RawSetString("sleep", L.NewNamedFunction("mcp.sleep", v.withoutSlot(mcp.RawGetString("sleep").(*lua.LFunction).GFunction)))
	v.loaded.RawSetString("mcp", mcp)
	pkg := L.CreateTable(0, 1)
	pkg.RawSetString("loaded", v.loaded)
	G.RawSetString("package", pkg)
	G.RawSetString("require", L.NewFunction(v.require))
}

// libraries is the content of the sandbox's standard library: the entries of
// _G and of each library table, as built by openLibs.
type libraries struct {
	globals []libEntry
	tables  []libTable
	str     int // index of the string library in tables
}

type libTable struct {
	name    string
	entries []libEntry
}

// libEntry is one key of _G or of a library table. A table value is named
// by table (an index into libraries.tables, or libGlobals for _G itself);
// any other value is shared as it is.
type libEntry struct {
	name  string
	value lua.LValue
	table int
}

const (
	libValue   = -1 // libEntry.table: the entry is value
	libGlobals = -2 // libEntry.table: the entry is _G
)

// sharedLibs builds the libraries once, on a state of their own that only
// lends them its function values.
var sharedLibs = sync.OnceValue(func() *libraries {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	openLibs(L)
	G := L.G.Global
	libs := &libraries{}
	index := map[*lua.LTable]int{G: libGlobals}
	entries := func(t *lua.LTable) []libEntry {
		var out []libEntry
		t.ForEach(func(k, val lua.LValue) {
			e := libEntry{name: string(k.(lua.LString)), value: val, table: libValue}
			if tv, ok := val.(*lua.LTable); ok {
				e.value, e.table = nil, index[tv]
			}
			out = append(out, e)
		})
		slices.SortFunc(out, func(a, b libEntry) int { return strings.Compare(a.name, b.name) })
		return out
	}
	names := []string{"string", "table", "math", "os", "coroutine"}
	for i, name := range names {
		index[G.RawGetString(name).(*lua.LTable)] = i
	}
	for _, name := range names {
		t := G.RawGetString(name).(*lua.LTable)
		libs.tables = append(libs.tables, libTable{name: name, entries: entries(t)})
	}
	libs.globals = entries(G)
	libs.str = slices.Index(names, "string")
	return libs
})

// openLibs opens the sandbox's libraries on L the way gopher-lua does, then
// trims and guards them.
func openLibs(L *lua.LState) {
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.OsLibName, lua.OpenOs},
		{lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	G := L.G.Global
	for _, name := range removedGlobals {
		G.RawSetString(name, lua.LNil)
	}
	fullOS := L.GetGlobal("os").(*lua.LTable)
	safeOS := L.CreateTable(0, 3)
	for _, name := range []string{"time", "clock", "date"} {
		safeOS.RawSetString(name, fullOS.RawGetString(name))
	}
	G.RawSetString("os", safeOS)
	guardLibs(L)
}

// print writes its arguments, tab-separated, to the server log. The log
// keeps logcap.Max bytes of a value, so that is all print builds: one string
// passed 64K times (unpack) would otherwise make gigabytes of Go memory the
// budget never sees. The rest is only counted, for the marker. The lines are
// metered (printlog.go): past the rate, they are dropped.
func (v *vm) print(L *lua.LState) int {
	var b strings.Builder
	total := 0 // bytes of the whole text
	write := func(s string) {
		total += len(s)
		if n := logcap.Max + 1 - b.Len(); n > 0 { // one past: the text is cut
			b.WriteString(s[:min(len(s), n)])
		}
	}
	for i := 1; i <= L.GetTop(); i++ {
		if i > 1 {
			write("\t")
		}
		write(L.ToStringMeta(L.Get(i)).String())
	}
	text := b.String()
	if total > logcap.Max {
		// Cut as logcap.String would, but short of Max by room for the
		// marker, or the log would cut the text again, counting only what
		// was built.
		head := logcap.Prefix(text, logcap.Max-64)
		text = head + "… [" + strconv.Itoa(total-len(head)) + " bytes cut]"
	}
	now := time.Now()
	if !v.s.prints.allow(len(text), now) {
		if ok, held := v.s.prints.dropped.Allow(now, logcap.Every); ok {
			v.s.logger.Warn("print: lines dropped, past the rate a script may log",
				"dropped", held+1, "burst_bytes", printBurst, "bytes_per_second", printRate)
		}
		return 0
	}
	v.s.logger.Info("print", "text", text)
	return 0
}

// load(chunk [, chunkname]) compiles a string, or the pieces a reader function
// returns, into a function; it returns nil and a message on failure.
func (v *vm) load(L *lua.LState) int {
	var src []byte
	switch chunk := L.Get(1).(type) {
	case lua.LString:
		src = []byte(chunk)
	case *lua.LFunction:
		for {
			L.Push(chunk)
			L.Call(0, 1)
			piece := L.Get(-1)
			L.Pop(1)
			if piece == lua.LNil {
				break
			}
			if !lua.LVCanConvToString(piece) {
				L.Push(lua.LNil)
				L.Push(lua.LString("reader function must return a string"))
				return 2
			}
			s := lua.LVAsString(piece)
			if s == "" {
				break
			}
			if len(src)+len(s) > maxLoadSize {
				return loadTooLarge(L)
			}
			src = append(src, s...)
		}
	default:
		L.ArgError(1, "string or function expected")
	}
	// Named as Lua 5.2's load names a chunk: a string by its own text.
	name := "=(load)"
	if chunk, ok := L.Get(1).(lua.LString); ok {
		name = string(chunk)
	}
	return v.compileChunk(L, src, L.OptString(2, name))
}

// loadstring(s [, chunkname]) is load for a string.
func (v *vm) loadstring(L *lua.LState) int {
	s := L.CheckString(1)
	return v.compileChunk(L, []byte(s), L.OptString(2, s))
}

func loadTooLarge(L *lua.LState) int {
	L.Push(lua.LNil)
	L.Push(lua.LString(fmt.Sprintf("chunk too large (at most %d KiB)", maxLoadSize>>10)))
	return 2
}

func (v *vm) compileChunk(L *lua.LState, src []byte, name string) int {
	if len(src) > maxLoadSize {
		return loadTooLarge(L)
	}
	// Shown as Lua 5.1 shows it: [string "first line..."], or name for
	// "=name" and "@name", cut to 60 bytes.
	name = lua.ChunkID(name)
	// The parse tree is Go memory the budget does not see; charged while
	// it lives, it is forgotten at the next measure.
	if L.ReserveMemory(len(src)*parseBytesPerByte) != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString("not enough memory to compile the chunk"))
		return 2
	}
	var interrupt func() error
	ctx := L.Context()
	if ctx != nil {
		interrupt = ctx.Err
	}
	proto, err := compile(src, name, maxLoadDepth, interrupt)
	if err != nil {
		if ctx != nil && ctx.Err() != nil {
			L.RaiseError("%s", ctx.Err().Error()) // as the VM does between instructions
		}
		L.Push(lua.LNil)
		L.Push(lua.LString(err.Error()))
		return 2
	}
	L.Push(L.NewFunctionFromProto(proto))
	return 1
}

// require(name) loads a Lua module from the script folder ("lib.util" is
// DIR/lib/util.lua, or DIR/lib/util/init.lua), once per state; "mcp" is the
// mcp module, and the host library's names (http, fs, json, ...) are its
// modules, built on first use.
func (v *vm) require(L *lua.LState) int {
	name := L.CheckString(1)
	if mod := v.loaded.RawGetString(name); mod != lua.LNil {
		L.Push(mod)
		return 1
	}
	if v.loading[name] {
		L.RaiseError("loop or previous error loading module '%s'", name)
	}
	if mod, ok := v.host.Open(name); ok {
		v.loaded.RawSetString(name, mod)
		L.Push(mod)
		return 1
	}
	proto, err := v.s.modules.get(name)
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	v.loading[name] = true
	L.Push(L.NewFunctionFromProto(proto))
	L.Push(lua.LString(name))
	L.Call(1, 1)
	delete(v.loading, name)
	mod := L.Get(-1)
	L.Pop(1)
	if mod == lua.LNil {
		// A module may fill package.loaded itself; otherwise it is true.
		if mod = v.loaded.RawGetString(name); mod == lua.LNil {
			mod = lua.LTrue
		}
	}
	v.loaded.RawSetString(name, mod)
	L.Push(mod)
	return 1
}

// modules compiles the Lua modules of one script folder, once each.
type modules struct {
	dir string

	mu     sync.Mutex
	protos map[string]*lua.FunctionProto // by module name
}

func newModules(dir string) *modules {
	return &modules{dir: dir, protos: make(map[string]*lua.FunctionProto)}
}

// get returns the compiled chunk of module name. Names are dot-separated
// words; the file must lie inside the folder (os.Root refuses "..", absolute
// paths and symbolic links that lead outside).
func (m *modules) get(name string) (*lua.FunctionProto, error) {
	if !validModuleName(name) {
		return nil, fmt.Errorf("invalid module name %s: modules are named like \"lib.util\" (DIR/lib/util.lua), inside the script folder", quoteName(name))
	}
	m.mu.Lock()
	proto := m.protos[name]
	m.mu.Unlock()
	if proto != nil {
		return proto, nil
	}
	root, err := os.OpenRoot(m.dir)
	if err != nil {
		return nil, fmt.Errorf("module '%s': cannot open the script folder", name)
	}
	defer root.Close()
	base := strings.ReplaceAll(name, ".", "/")
	for _, file := range []string{base + ".lua", base + "/init.lua"} {
		src, err := readSourceIn(root, file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("module '%s': cannot read %s: %v", name, file, errors.Unwrap(err))
		}
		proto, err := compile(src, file, maxFileDepth, nil)
		if err != nil {
			return nil, fmt.Errorf("error loading module '%s': %v", name, err)
		}
		m.mu.Lock()
		m.protos[name] = proto
		m.mu.Unlock()
		return proto, nil
	}
	return nil, fmt.Errorf("module '%s' not found in the script folder (no %s.lua or %s/init.lua)", name, base, base)
}

// ModulePath reports whether rel, a slash-separated path inside a script
// folder, may be a module require loads (lib/util.lua, lib/util/init.lua) or
// a folder on the way to one (lib): each of its parts a word of a module
// name. Any other path (notes.txt, an editor's backup rl.lua~) no require
// can name.
func ModulePath(rel string) bool {
	name := strings.TrimSuffix(rel, ".lua")
	return !strings.Contains(name, ".") && validModuleName(strings.ReplaceAll(name, "/", "."))
}

// maxModuleName is the longest module name: a file path of a few folders,
// and what an error message quotes whole.
const maxModuleName = 200

// validModuleName accepts dot-separated words of letters, digits, _ and -,
// at most maxModuleName bytes.
func validModuleName(name string) bool {
	if name == "" || len(name) > maxModuleName {
		return false
	}
	for part := range strings.SplitSeq(name, ".") {
		if part == "" {
			return false
		}
		for _, c := range part {
			switch {
			case c == '_' || c == '-':
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			default:
				return false
			}
		}
	}
	return true
}

// quoteName quotes a module name for an error message, its first
// maxModuleName bytes when it is longer: require(string.rep("x", 2^22))
// made a message of 4 MiB or more for each call that pcall caught.
func quoteName(name string) string {
	if len(name) <= maxModuleName {
		return strconv.Quote(name)
	}
	return strconv.Quote(logcap.Prefix(name, maxModuleName)) + "... (" + strconv.Itoa(len(name)) + " bytes)"
}
