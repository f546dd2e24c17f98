package lua

import "errors"

// Patched for luamcp: baselines.
//
// A host that builds a state and runs a script's main chunk on it for each
// client (luamcp: one state per session) pays the build for every client. It
// could give a state back for the next client instead, but only if no Lua
// code could tell the difference from a state just built. A Baseline, taken
// right after the build, records everything mutable that Lua code can reach:
// the tables (through the Touched flag every write sets, written.go), the
// upvalues (their written flag, set by every Upvalue.SetValue), the
// environments of Lua functions, the metatables and environments of
// userdata, the globals table, the builtin metatables (the string
// metatable). Pristine then tells whether any of it changed; Reset puts the
// parts Lua does not reach back as they were (stack, budget).
//
// Reachability is the ground of soundness: a change Lua can observe later
// must be a change to something Lua can reach from a root, and every such
// thing is recorded. Values a state creates after the baseline are
// reachable only through a recorded table or upvalue (written, so seen) or
// through the stack (reset), unless the host keeps them itself: the host
// must pass as roots every Lua value it keeps and lends to Lua later, and
// forget the values it kept for a client before it lends the state again.
//
// What a baseline refuses (Pristine always fails): a state that holds a
// coroutine (a thread resumed and yielded again looks as it did), a channel,
// an open upvalue, or a Go function whose upvalue holds a mutable value (Go
// functions may be shared between states: their upvalues must hold
// constants). The environments of Go functions are not recorded: Lua can
// change them only through setfenv or the debug library, which a host that
// recycles states must not open (luamcp's sandbox has neither).

// A Baseline is the record of a state's reachable mutable values; see
// [LState.NewBaseline].
type Baseline struct {
	tables   []*LTable
	upvalues []*Upvalue
	funcs    []funcEnv
	userdata []userdataShot
	mts      []metaShot
	global   *LTable // G.Global
	env      *LTable // the main thread's environment
	registry *LTable // G.Registry
	regCap   int     // the value stack's capacity
	random   RandomState
	used     int64 // the budget's count (budget.go)
	measured int64
	// refused says why the state can never be pristine, or is nil.
	refused error
}

type funcEnv struct {
	fn  *LFunction
	env *LTable
}

type userdataShot struct {
	ud   *LUserData
	meta LValue
	env  *LTable
}

type metaShot struct {
	typ  int
	meta LValue
}

// Reasons a state is not pristine.
var (
	errBaselineThread   = errors.New("the state holds a coroutine")
	errBaselineChannel  = errors.New("the state holds a channel")
	errBaselineOpen     = errors.New("the state holds an open upvalue")
	errBaselineGoUpval  = errors.New("a Go function's upvalue holds a mutable value")
	errBaselineTable    = errors.New("a table was written to")
	errBaselineUpvalue  = errors.New("an upvalue was assigned")
	errBaselineEnv      = errors.New("an environment was changed")
	errBaselineMeta     = errors.New("a builtin metatable was changed")
	errBaselineUserdata = errors.New("a userdata was changed")
	errBaselineBusy     = errors.New("the state is running or holds call frames")
	errBaselineFiles    = errors.New("the state holds temporary files")
)

// NewBaseline records what Lua can reach in the state, from its registry,
// globals, environment, builtin metatables and the host's roots, and clears
// the Touched flag of every table and the written flag of every upvalue it
// records. It must be called between calls (no Lua running) by the state's
// owner, on its main thread.
func (ls *LState) NewBaseline(roots ...LValue) *Baseline {
	g := ls.G
	b := &Baseline{
		global:   g.Global,
		env:      ls.Env,
		registry: g.Registry,
		regCap:   cap(ls.reg.array),
		random:   ls.RandomState(),
		used:     g.budget.used,
		measured: g.budget.measured,
	}
	g.budget.mark++
	if g.budget.mark == 0 {
		g.budget.mark = 1
	}
	w := baselineWalker{ls: ls, b: b, mark: g.budget.mark}
	w.value(g.Registry)
	w.value(g.Global)
	if ls.Env != nil {
		w.value(ls.Env)
	}
	for typ, mt := range g.builtinMts {
		b.mts = append(b.mts, metaShot{typ, mt})
		w.value(mt)
	}
	for _, r := range roots {
		w.value(r)
	}
	for len(w.stack) > 0 {
		v := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		w.scan(v)
	}
	return b
}

type baselineWalker struct {
	ls    *LState
	b     *Baseline
	mark  uint32
	stack []LValue // marked, not yet scanned
}

func (w *baselineWalker) refuse(err error) {
	if w.b.refused == nil {
		w.b.refused = err
	}
}

// value records v and queues what it holds.
func (w *baselineWalker) value(v LValue) {
	switch v := v.(type) {
	case *LTable:
		if v != nil && v.mark != w.mark {
			v.mark = w.mark
			v.hcap &^= tableTouched
			w.b.tables = append(w.b.tables, v)
			w.stack = append(w.stack, v)
		}
	case *LFunction:
		if v == nil {
			return
		}
		if v.IsG {
			// Not marked nor written to: Go functions may be shared
			// between states (as the budget's walk, budget.go).
			for _, uv := range v.Upvalues {
				if uv == nil {
					continue
				}
				switch uv.Value().(type) {
				case *LNilType, LBool, LNumber, LString:
				case *LState:
					w.refuse(errBaselineThread)
				case *LFunction:
					if fn := uv.Value().(*LFunction); !fn.IsG || len(fn.Upvalues) > 0 {
						w.refuse(errBaselineGoUpval)
					}
				default:
					w.refuse(errBaselineGoUpval)
				}
			}
			return
		}
		if v.mark != w.mark {
			v.mark = w.mark
			w.stack = append(w.stack, v)
		}
	case *LUserData:
		if v != nil && v.mark != w.mark {
			v.mark = w.mark
			w.stack = append(w.stack, v)
		}
	case *LState:
		if v != w.ls && v != nil {
			w.refuse(errBaselineThread)
		}
	case LChannel:
		w.refuse(errBaselineChannel)
	}
}

func (w *baselineWalker) scan(v LValue) {
	switch v := v.(type) {
	case *LTable:
		w.value(v.Metatable)
		v.eachStored(nil, w.value)
	case *LFunction:
		w.b.funcs = append(w.b.funcs, funcEnv{v, v.Env})
		if v.Env != nil {
			w.value(v.Env)
		}
		for _, uv := range v.Upvalues {
			if uv == nil {
				continue
			}
			if !uv.IsClosed() {
				w.refuse(errBaselineOpen)
			}
			uv.written = false
			w.b.upvalues = append(w.b.upvalues, uv)
			w.value(uv.Value())
		}
	case *LUserData:
		w.b.userdata = append(w.b.userdata, userdataShot{v, v.Metatable, v.Env})
		if v.Env != nil {
			w.value(v.Env)
		}
		w.value(v.Metatable)
	}
}

// Pristine returns nil when no Lua code could tell the state from what it
// was when b was taken: nothing b recorded changed, and the state is idle
// (no call in progress, no call frames, no open upvalues). Otherwise it
// returns the first difference found. It allocates nothing.
func (b *Baseline) Pristine(ls *LState) error {
	if b.refused != nil {
		return b.refused
	}
	g := ls.G
	if ls.currentFrame != nil || ls.stack == nil || ls.stack.Sp() != 0 || ls.uvcache != nil ||
		ls.Dead || ls.Parent != nil || g.CurrentThread != ls || ls.ctx != nil {
		return errBaselineBusy
	}
	if len(g.tempFiles) != 0 {
		return errBaselineFiles
	}
	if g.Global != b.global || ls.Env != b.env || g.Registry != b.registry {
		return errBaselineEnv
	}
	if len(g.builtinMts) != len(b.mts) {
		return errBaselineMeta
	}
	for _, m := range b.mts {
		if g.builtinMts[m.typ] != m.meta {
			return errBaselineMeta
		}
	}
	for _, t := range b.tables {
		if t.hcap&tableTouched != 0 {
			return errBaselineTable
		}
	}
	for _, uv := range b.upvalues {
		if uv.written {
			return errBaselineUpvalue
		}
	}
	for _, f := range b.funcs {
		if f.fn.Env != f.env {
			return errBaselineEnv
		}
	}
	for _, u := range b.userdata {
		if u.ud.Metatable != u.meta || u.ud.Env != u.env {
			return errBaselineUserdata
		}
	}
	return nil
}

// Reset puts back what Lua cannot reach but a fresh state has: an empty
// value stack of the recorded capacity and the memory budget's count as it
// was when b was taken (a pristine state holds exactly what it held then:
// everything made since is unreachable). Call it only after Pristine
// returned nil.
func (b *Baseline) Reset(ls *LState) {
	ls.SetTop(0)
	if cap(ls.reg.array) != b.regCap {
		ls.reg.forceResize(b.regCap)
	}
	ls.SetRandomState(b.random)
	bu := &ls.G.budget
	bu.used, bu.measured = b.used, b.measured
	bu.root = nil // the last client's (SetMemoryRoot)
	bu.steps = 0
	bu.published.Store(b.used)
	bu.setNext()
}

// Size returns the number of tables, upvalues and functions b recorded.
func (b *Baseline) Size() (tables, upvalues, functions int) {
	return len(b.tables), len(b.upvalues), len(b.funcs)
}
