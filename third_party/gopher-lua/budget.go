package lua

// Patched for luamcp (see PATCHES.md): a memory budget per state and
// cancellation checks for the Go loops of the libraries.
//
// Upstream gopher-lua has no hook before an allocation: a host can only watch
// the process heap, which cannot stop one allocation of gigabytes (s..s on a
// large string) and cannot tell which state is to blame. Here every
// allocation a script controls is charged to its state's budget before it
// happens: the VM's string concatenation, tables and closures, table growth,
// threads, and the strings and tables the libraries build. Charging is a
// counter add and a compare. When the counter passes the limit, the state's
// live size is measured (a walk of everything reachable from it) and the
// counter is reset to it; the allocation is refused only when the live size is
// still over, so garbage is never held against a script.

import (
	"errors"
	"math"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// ErrMemoryLimit is the error of an allocation that would take a state past
// its memory limit. Lua code sees it as the error "memory limit exceeded".
var ErrMemoryLimit = errors.New("memory limit exceeded")

// Approximate sizes, in bytes, of what the budget counts, after Go's layout
// on 64-bit platforms and its allocator's size classes (budget_test.go checks
// them against the heap).
const (
	sizeValue     = 16  // an LValue slot: array parts, registries, upvalues
	sizeString    = 16  // a string header, besides its bytes
	sizeNumber    = 8   // a boxed LNumber
	sizeTable     = 96  // an LTable
	sizeHashBase  = 256 // the keys slice and the maps of a table with a hash part
	sizeHashKey   = 160 // one key of a hash part: map slot, keys and k2i entries, growth slack
	sizeHashSlot  = 66  // one slot reserved by a map's capacity hint
	sizeFunction  = 64  // an LFunction
	sizeUpvalue   = 56  // an Upvalue and its pointer
	sizeUserData  = 48  // an LUserData
	sizeThread    = 512 // an LState besides its registry and call frames
	sizeFrameSeg  = int(unsafe.Sizeof(callFrameStackSegment{}))
	sizeCallFrame = int(unsafe.Sizeof(callFrame{}))
	sizeProto     = 256 // a FunctionProto besides its slices
	// sizePatternByte is what compiling a pattern allocates per byte of it,
	// at most (pm.Compile: per item a node, its class, a slot of a slice
	// grown by appending, and one to three instructions of 40 bytes).
	// TestPatternCompileCost measures it: a run of plain characters takes
	// up to 174 bytes per byte (at 100 bytes; 155 from 1 KB up), "a*" 130,
	// classes and sets less than 80.
	sizePatternByte = 192
)

// bigString is the length from which the walk counts a string once however
// many values share it (copies of one value share its bytes, and so do the
// substrings Go code makes; the string library copies its substrings).
// Strings are told apart by where their bytes start: of those that start at
// the same byte, the walk counts the longest (s[:n] shares the bytes of s);
// one that starts elsewhere in the same bytes (s[1:]) counts in full, an
// over-count that keeps the walk simple.
const bigString = 256

// stepsPerCheck is how many units of work (bytes, elements, comparisons) a
// library loop does between two checks of the state's context.
const stepsPerCheck = 1 << 16

// publishStep is how many bytes may be charged before the accounted size is
// published again for other goroutines (MemoryAccounted).
const publishStep = 1 << 20

// memoryBudget is the memory account of a Global: the main thread and its
// coroutines share it. Only the goroutine running the state touches it,
// except published.
type memoryBudget struct {
	// limit is the most bytes the state may hold; math.MaxInt64 when it has
	// no limit.
	limit int64
	// used is the live size measured last plus every charge since. It never
	// decreases between two measures: frees are seen by measuring.
	used int64
	// next is the value of used past which a charge takes the slow path:
	// the limit, or the next publication when that comes first.
	next int64
	// measured is used right after the last measure; slack is how far used
	// may grow past it, beyond the limit, before a small charge measures
	// again. Between two measures a state may thus exceed its limit by
	// slack (an eighth of it), never by one allocation larger than that.
	measured, slack int64
	// mark is the epoch of the last walk (LTable.mark and others).
	mark uint32
	// steps counts the work of library loops since the last context check.
	steps int
	// published is used as of the last publication.
	published atomic.Int64
	// root is a value the host keeps outside Lua for the state, which the
	// measure counts as reachable (SetMemoryRoot); nil when none.
	root LValue
}

// init makes a budget without a limit.
func (b *memoryBudget) init() {
	b.limit = math.MaxInt64
	b.setNext()
}

// SetMemoryLimit sets how many bytes the state and its coroutines may hold;
// 0 or less removes the limit. A charge that would take the state past it
// fails with ErrMemoryLimit, raised as a Lua error while Lua runs.
func (ls *LState) SetMemoryLimit(limit int64) {
	b := &ls.G.budget
	if limit <= 0 {
		limit = math.MaxInt64
	}
	b.limit = limit
	b.slack = limit / 8
	b.setNext()
}

// MemoryLimit returns the state's memory limit in bytes, 0 when it has none.
func (ls *LState) MemoryLimit() int64 {
	if l := ls.G.budget.limit; l != math.MaxInt64 && l > 0 {
		return l
	}
	return 0
}

// MemoryUsage measures the state: it walks everything reachable from its
// registry, globals, string metatable and threads, and returns an estimate of
// their size in bytes. The budget's count restarts from it.
func (ls *LState) MemoryUsage() int64 {
	b := &ls.G.budget
	live, _ := ls.measure()
	b.used, b.measured = live, live
	b.published.Store(live)
	b.setNext()
	return live
}

// SetMemoryRoot makes the state's measure count v, a value the host keeps
// outside Lua and lends to it in calls (luamcp: a session's state between
// two calls), as if Lua reached it: a measure taken while Lua does not reach
// it (a host's MemoryUsage between calls, a decode's) would otherwise leave
// it out, and the budget's count would restart without it, letting the
// state grow by its whole limit again. nil or LNil forgets it. Patched for
// luamcp.
func (ls *LState) SetMemoryRoot(v LValue) {
	if v == LNil {
		v = nil
	}
	ls.G.budget.root = v
}

// MemoryAccounted returns the state's accounted size: its last measured size
// plus what was charged since, as of at most a MiB of charges ago. Unlike the
// other methods, it may be called from any goroutine.
func (ls *LState) MemoryAccounted() int64 { return ls.G.budget.published.Load() }

// Three ways to account an allocation:
//
//   - charge checks the budget and raises "memory limit exceeded" while the
//     state runs Lua: the VM, the libraries and the setters that could raise
//     already (setField, RawSet) use it before they allocate.
//   - count adds to the budget without checking: the constructors of the API
//     (NewTable, CreateTable, NewFunction, NewThread...) and RawSetInt, which
//     never raised upstream and which hosts call from Go code that may not
//     expect a Lua error. The next charge checks what they counted.
//   - ReserveMemory checks without raising: for Go code that builds large
//     values and refuses them with an error of its own.

// ReserveMemory charges n bytes that Go code is about to allocate for the
// state (strings it builds, values it decodes). It returns ErrMemoryLimit and
// charges nothing when the state would then exceed its limit. Memory held
// only by Go code is invisible to the measure: such code should also bound
// its own total, e.g. by MemoryLimit.
func (ls *LState) ReserveMemory(n int) error {
	if !ls.reserve(n) {
		return ErrMemoryLimit
	}
	return nil
}

// charge charges n bytes about to be allocated. Past the limit it raises
// "memory limit exceeded" while the state runs Lua; outside a call (Go code
// setting values between calls) the allocation goes ahead and is counted.
func (ls *LState) charge(n int) {
	b := &ls.G.budget
	b.used += int64(n)
	if uint64(b.used) > uint64(b.next) {
		ls.chargeSlow(int64(n))
	}
}

func (ls *LState) chargeSlow(n int64) {
	if !ls.settle(n) {
		if ls.currentFrame != nil {
			ls.RaiseError("%s", ErrMemoryLimit.Error())
		}
		ls.G.budget.used += n
	}
}

// count adds n bytes to the budget without checking it.
func (ls *LState) count(n int) { ls.G.budget.used += int64(n) }

// reserve is the hot path: an add and a compare (an overflow makes used
// negative, which the unsigned compare also sends to the slow path).
func (ls *LState) reserve(n int) bool {
	b := &ls.G.budget
	b.used += int64(n)
	if uint64(b.used) > uint64(b.next) {
		return ls.settle(int64(n))
	}
	return true
}

// settle is reserve's slow path. Past the limit, it measures the state when
// the charge is large, when enough was charged since the last measure, or
// when that measure found the state over its limit; it refuses (uncharging n)
// when the state would still be over. It publishes the count.
func (ls *LState) settle(n int64) bool {
	b := &ls.G.budget
	overflow := b.used < 0
	// Small charges past the limit share the slack, unless the last measure
	// found the state over its limit already.
	if overflow || b.used > b.limit && (n >= b.slack || b.used-b.measured >= b.slack || b.measured > b.limit) {
		live, done := ls.measure()
		b.measured = live
		if !done || live > b.limit || n > b.limit-live {
			b.used = live
			b.published.Store(live)
			b.setNext()
			return false
		}
		b.used = live + n
	}
	b.published.Store(b.used)
	b.setNext()
	return true
}

func (b *memoryBudget) setNext() {
	b.next = b.limit
	if b.used < b.limit && b.used < math.MaxInt64-publishStep {
		b.next = min(b.limit, b.used+publishStep)
	}
}

// yieldEvery is how many VM instructions a call runs between two
// runtime.Gosched calls (some 60 µs). Go preempts a running goroutine only
// after 10 ms: without the yield, a few Lua calls that spin hold every P
// for that long at a time, and each step of a short request elsewhere in the
// process (its handler, its Lua call) waits behind them; luamcp measured a
// healthy route's p99 at 200 ms beside 32 spinning sessions, 25 ms with the
// yield. What remains is the network poller: while every P has work, Go
// polls it only every 10 ms (sysmon).
const yieldEvery = 1 << 12

// step counts n units of work of a library loop and, every stepsPerCheck
// units, raises the error of the state's context once it is done (the VM
// checks it between instructions only) and yields the CPU (see yieldEvery).
func (ls *LState) step(n int) {
	b := &ls.G.budget
	b.steps += n
	if b.steps >= stepsPerCheck {
		b.steps = 0
		ls.checkContext()
		runtime.Gosched()
	}
}

func (ls *LState) checkContext() {
	if err := ls.contextErr(); err != nil {
		ls.RaiseError("%s", err.Error())
	}
}

func (ls *LState) contextErr() error {
	if ls.ctx == nil {
		return nil
	}
	select {
	case <-ls.ctx.Done():
		return ls.ctx.Err()
	default:
		return nil
	}
}

// patternGuard bounds the pattern matcher (pm.Guard) by the state's context
// and budget.
type patternGuard struct{ ls *LState }

func (g patternGuard) Err() error          { return g.ls.contextErr() }
func (g patternGuard) Reserve(n int) error { return g.ls.ReserveMemory(n) }

// Sizes of what the VM and the API allocate.

// mulSize returns a*b, or math.MaxInt when it overflows or a or b is
// negative.
func mulSize(a, b int) int {
	if a < 0 || b < 0 {
		return math.MaxInt
	}
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt/b {
		return math.MaxInt
	}
	return a * b
}

// addSize returns a+b for sizes, saturating at math.MaxInt.
func addSize(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// maxHint bounds the capacity hints newTableCost reads, so that its sums
// cannot overflow: a hint that large cannot be allocated anyway. (Patched
// for luamcp: 1<<40 overflowed int on 32-bit platforms.)
const maxHint = min(1<<40, math.MaxInt>>8)

// newTableCost is the size of a table created with these capacity hints.
func newTableCost(acap, hcap int) int {
	acap, hcap = min(max(acap, 0), maxHint), min(max(hcap, 0), maxHint)
	n := sizeTable + acap*sizeValue
	if hcap > 0 {
		n += sizeHashBase + hcap*sizeHashSlot
	}
	return n
}

// tableCost is the size of tb itself, not of the values it holds.
func tableCost(tb *LTable) int {
	n := sizeTable + cap(tb.array)*sizeValue
	if tb.isSmall() {
		return n + cap(tb.keys)*sizeValue
	}
	if tb.strdict != nil || tb.dict != nil || tb.keys != nil {
		keys := len(tb.keys)
		n += sizeHashBase + keys*sizeHashKey
		if hint := tb.hint(); hint > keys {
			n += (hint - keys) * sizeHashSlot
		}
	}
	return n
}

// tableGrowth is an upper bound of what setting tb[key] allocates at once:
// the array slots up to key, or the growth of a full array part, or a hash
// map created with a capacity hint. A new hash key is a small allocation,
// charged after the fact.
func tableGrowth(tb *LTable, key LValue) int {
	switch k := key.(type) {
	case LNumber:
		if isArrayKey(k) {
			return arrayGrowth(tb, int(k))
		}
		if tb.dict == nil {
			return dictGrowth(tb)
		}
	case LString:
		return stringKeyGrowth(tb)
	default:
		if tb.dict == nil {
			return dictGrowth(tb)
		}
	}
	return 0
}

// dictGrowth is what a table without dict allocates for its first key that
// is not a string: the dict, and the string map a small table switches to.
func dictGrowth(tb *LTable) int {
	if tb.isSmall() {
		return 2 * (tb.smallKeys() + 1) * sizeHashSlot
	}
	return len(tb.strdict) * sizeHashSlot
}

func stringKeyGrowth(tb *LTable) int {
	if tb.strdict == nil {
		return lazyHashCap * sizeHashSlot
	}
	return 0
}

// arrayGrowth is an upper bound of what setting tb[n] allocates in the array
// part (upstream fills any gap before n with nils).
func arrayGrowth(tb *LTable, n int) int {
	if n <= cap(tb.array) || n >= MaxArrayIndex {
		return 0
	}
	c := cap(tb.array)
	return (max(n, 2*c, defaultArrayCap) - c) * sizeValue
}

// closureCost is the size of a function with nup upvalues.
func closureCost(nup int) int { return sizeFunction + nup*sizeUpvalue }

// threadCost is the size of a new thread of a state with these options.
func threadCost(o Options) int {
	n := sizeThread + o.RegistrySize*sizeValue
	if o.MinimizeStackMemory {
		return n + sizeFrameSeg + (o.CallStackSize/FramesPerSegment+1)*8
	}
	return n + o.CallStackSize*sizeCallFrame
}

// tableSet is tb.RawSet(key, value) with the table's growth charged: the
// array slots or hash map it may allocate before, a new hash key after (one
// entry). Setting a slot of the array part, or appending within its
// capacity, allocates nothing and takes a short cut.
func (ls *LState) tableSet(tb *LTable, key LValue, value LValue) {
	switch k := key.(type) {
	case LNumber:
		if i := int(k); LNumber(i) == k && i >= 1 {
			if i <= len(tb.array) {
				tb.array[i-1] = value
				tb.written()
				return
			}
			if i == len(tb.array)+1 && i <= cap(tb.array) {
				tb.array = append(tb.array, value)
				tb.written()
				return
			}
		}
	case LString:
		ls.tableSetString(tb, string(k), value)
		return
	}
	ls.tableGrow(tb, key, value)
}

// tableSetString is tableSet for a string key.
func (ls *LState) tableSetString(tb *LTable, key string, value LValue) {
	if tb.strdict != nil && tb.keys != nil {
		n := len(tb.keys)
		tb.RawSetString(key, value)
		if len(tb.keys) != n {
			ls.charge(sizeHashKey)
		}
		return
	}
	// A small table (small.go), or one without a hash part, that will not
	// switch to the maps: the pairs grow by appending, a small allocation
	// charged after the fact.
	if tb.strdict == nil && tb.dict == nil && len(tb.keys) < 2*smallMax {
		c := cap(tb.keys)
		tb.RawSetString(key, value)
		if d := cap(tb.keys) - c; d > 0 {
			ls.charge(d * sizeValue)
		}
		return
	}
	before := tableCost(tb)
	pre := stringKeyGrowth(tb)
	if pre > 0 {
		ls.charge(pre)
	}
	tb.RawSetString(key, value)
	if d := tableCost(tb) - before - pre; d > 0 {
		ls.charge(d)
	}
}

// tableGrow is tableSet's general case.
func (ls *LState) tableGrow(tb *LTable, key LValue, value LValue) {
	before := tableCost(tb)
	pre := tableGrowth(tb, key)
	if pre > 0 {
		ls.charge(pre)
	}
	tb.RawSet(key, value)
	if d := tableCost(tb) - before - pre; d > 0 {
		ls.charge(d)
	}
}

// The walk.

// measure returns an estimate of the bytes the state holds: everything
// reachable from its registry, globals, builtin metatables and threads. It
// marks what it visits with a new epoch rather than keeping a visited set,
// so that it allocates little. Go functions are not marked: the host may
// share them between states (luamcp does), and they hold no Lua values but
// their upvalues. A walk takes about a millisecond per 2 MB; it stops early,
// reporting done false, when the state's context is done.
func (ls *LState) measure() (size int64, done bool) {
	g := ls.G
	b := &g.budget
	b.mark++
	if b.mark == 0 {
		b.mark = 1
	}
	w := walker{mark: b.mark}
	w.value(g.Registry)
	w.value(g.Global)
	if b.root != nil {
		w.value(b.root)
	}
	for _, mt := range g.builtinMts {
		w.value(mt)
	}
	if g.MainThread != nil {
		w.value(g.MainThread)
	}
	if g.CurrentThread != nil {
		w.value(g.CurrentThread)
	}
	w.value(ls)
	for i := 1; len(w.stack) > 0; i++ {
		if i%4096 == 0 && ls.contextErr() != nil {
			return int64(w.size), false
		}
		v := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		w.scan(v)
	}
	return int64(w.size), true
}

type walker struct {
	mark   uint32
	size   int
	stack  []LValue // marked, not yet scanned
	protos map[*FunctionProto]struct{}
	big    map[*byte]int // strings of bigString bytes or more: the length counted from each start
}

// value counts v, or queues it for scan when it holds other values.
func (w *walker) value(v LValue) {
	switch v := v.(type) {
	case LString:
		w.str(string(v))
	case LNumber:
		w.size += sizeNumber
	case *LTable:
		if v != nil && v.mark != w.mark {
			v.mark = w.mark
			w.stack = append(w.stack, v)
		}
	case *LFunction:
		if v == nil {
			return
		}
		if v.IsG {
			w.size += closureCost(len(v.Upvalues))
			for _, uv := range v.Upvalues {
				if uv != nil {
					w.value(uv.Value())
				}
			}
			return
		}
		if v.mark != w.mark {
			v.mark = w.mark
			w.stack = append(w.stack, v)
		}
	case *LState:
		if v != nil && v.mark != w.mark {
			v.mark = w.mark
			w.stack = append(w.stack, v)
		}
	case *LUserData:
		if v != nil && v.mark != w.mark {
			v.mark = w.mark
			w.stack = append(w.stack, v)
		}
	}
}

func (w *walker) str(s string) {
	if len(s) < bigString {
		w.size += sizeString + len(s)
		return
	}
	// Patched for luamcp: a prefix met first (same start, fewer bytes) made
	// the walk skip the whole string, and a script could keep any amount
	// of memory past its budget behind 256-byte prefixes of it.
	p := unsafe.StringData(s)
	if n, ok := w.big[p]; ok {
		if len(s) > n {
			w.size += len(s) - n
			w.big[p] = len(s)
		}
		return
	}
	if w.big == nil {
		w.big = make(map[*byte]int)
	}
	w.big[p] = len(s)
	w.size += sizeString + len(s)
}

// key counts a string key of a table (its bytes; the key's slot is in
// tableCost).
func (w *walker) key(k string) { w.size += len(k) }

func (w *walker) scan(v LValue) {
	switch v := v.(type) {
	case *LTable:
		w.size += tableCost(v)
		w.value(v.Metatable)
		v.eachStored(w.key, w.value)
	case *LFunction:
		w.size += closureCost(len(v.Upvalues))
		if v.Env != nil {
			w.value(v.Env)
		}
		for _, uv := range v.Upvalues {
			if uv != nil {
				w.value(uv.Value())
			}
		}
		w.proto(v.Proto)
	case *LState:
		w.size += sizeThread
		if v.reg != nil {
			w.size += cap(v.reg.array) * sizeValue
			for _, e := range v.reg.array[:v.reg.top] {
				w.value(e)
			}
		}
		switch st := v.stack.(type) {
		case *autoGrowingCallFrameStack:
			w.size += len(st.segments) * 8
			for _, seg := range st.segments {
				if seg != nil {
					w.size += sizeFrameSeg
				}
			}
		case *fixedCallFrameStack:
			w.size += cap(st.array) * sizeCallFrame
		}
		if v.stack != nil {
			for i := 0; i < v.stack.Sp(); i++ {
				if cf := v.stack.At(i); cf != nil && cf.Fn != nil {
					w.value(cf.Fn)
				}
			}
		}
		if v.Env != nil {
			w.value(v.Env)
		}
		if v.Parent != nil {
			w.value(v.Parent)
		}
	case *LUserData:
		w.size += sizeUserData
		if v.Env != nil {
			w.value(v.Env)
		}
		w.value(v.Metatable)
		if m, ok := v.Value.(measured); ok {
			m.measure(w)
		}
	}
}

// measured is implemented by the Go values of the libraries' userdata that
// keep Lua strings or Go memory of their own (gmatchState).
type measured interface{ measure(w *walker) }

// proto counts a function prototype and those nested in it, once each.
func (w *walker) proto(p *FunctionProto) {
	if p == nil {
		return
	}
	if _, ok := w.protos[p]; ok {
		return
	}
	if w.protos == nil {
		w.protos = make(map[*FunctionProto]struct{})
	}
	w.protos[p] = struct{}{}
	w.size += protoCost(p)
	// Patched for luamcp: every prototype of a chunk keeps the chunk's name:
	// SourceName, as shown, and chunkName, as load or loadstring was given it
	// (loadstring's default: the chunk's text). A script chooses them, and a
	// host compiling a script's chunks may name them as the script says
	// (luavm's load and loadstring do). A long one is counted, once, as any
	// long string; a short one is within sizeProto. Uncounted, 64 chunks
	// named by strings of 1 MiB held 64 MiB under a 16 MiB budget.
	if len(p.SourceName) >= bigString {
		w.str(p.SourceName)
	}
	if p.chunkName != nil && len(*p.chunkName) >= bigString {
		w.str(*p.chunkName)
	}
	for _, c := range p.Constants {
		w.value(c)
	}
	for _, np := range p.FunctionPrototypes {
		w.proto(np)
	}
}

// protoCost is the size of p without its constants and nested prototypes.
func protoCost(p *FunctionProto) int {
	return sizeProto + len(p.Code)*4 + len(p.Constants)*sizeValue +
		len(p.FunctionPrototypes)*8 + len(p.DbgSourcePositions)*8 +
		len(p.DbgLocals)*48 + len(p.DbgCalls)*32 + len(p.DbgUpvalues)*16 +
		len(p.stringConstants)*sizeString
}

// protoTreeCost is the size of p and every prototype nested in it, with their
// constants.
func protoTreeCost(p *FunctionProto) int {
	n := protoCost(p)
	for _, c := range p.Constants {
		if s, ok := c.(LString); ok {
			n += len(s)
		}
	}
	for _, np := range p.FunctionPrototypes {
		n = addSize(n, protoTreeCost(np))
	}
	return n
}

// registryGrower is told how much a registry grows (LState is one).
type registryGrower interface{ registryGrow(bytes int) }

// registryGrow counts the growth of a thread's registry (registryHandler).
// It is not checked there: a registry grows inside error handling too, where
// raising would escape PCall. Registries are bounded by
// Options.RegistryMaxSize; the next charge, at the latest coroutine.resume,
// checks the count.
func (ls *LState) registryGrow(n int) { ls.count(n) }
