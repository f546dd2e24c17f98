package lua

import (
	"math"
	"math/rand/v2"
)

func OpenMath(L *LState) int {
	mod := L.RegisterModule(MathLibName, mathFuncs).(*LTable)
	mod.RawSetString("pi", LNumber(math.Pi))
	mod.RawSetString("huge", LNumber(math.Inf(1))) // patched for luamcp: infinity, as Lua's HUGE_VAL (upstream: the largest finite number)
	// Patched for luamcp: mod is Lua 5.1's alias of fmod (LUA_COMPAT_MOD),
	// the same function; upstream's was the % operator (math.mod(-5, 3) was
	// 1, Lua 5.1's -2).
	mod.RawSetString("mod", mod.RawGetString("fmod"))
	L.Push(mod)
	return 1
}

var mathFuncs = map[string]LGFunction{
	"abs":        mathAbs,
	"acos":       mathAcos,
	"asin":       mathAsin,
	"atan":       mathAtan,
	"atan2":      mathAtan2,
	"ceil":       mathCeil,
	"cos":        mathCos,
	"cosh":       mathCosh,
	"deg":        mathDeg,
	"exp":        mathExp,
	"floor":      mathFloor,
	"fmod":       mathFmod,
	"frexp":      mathFrexp,
	"ldexp":      mathLdexp,
	"log":        mathLog,
	"log10":      mathLog10,
	"max":        mathMax,
	"min":        mathMin,
	"modf":       mathModf,
	"pow":        mathPow,
	"rad":        mathRad,
	"random":     mathRandom,
	"randomseed": mathRandomseed,
	"sin":        mathSin,
	"sinh":       mathSinh,
	"sqrt":       mathSqrt,
	"tan":        mathTan,
	"tanh":       mathTanh,
}

func mathAbs(L *LState) int {
	L.Push(LNumber(math.Abs(float64(L.CheckNumber(1)))))
	return 1
}

func mathAcos(L *LState) int {
	L.Push(LNumber(math.Acos(float64(L.CheckNumber(1)))))
	return 1
}

func mathAsin(L *LState) int {
	L.Push(LNumber(math.Asin(float64(L.CheckNumber(1)))))
	return 1
}

func mathAtan(L *LState) int {
	L.Push(LNumber(math.Atan(float64(L.CheckNumber(1)))))
	return 1
}

func mathAtan2(L *LState) int {
	L.Push(LNumber(math.Atan2(float64(L.CheckNumber(1)), float64(L.CheckNumber(2)))))
	return 1
}

func mathCeil(L *LState) int {
	L.Push(LNumber(math.Ceil(float64(L.CheckNumber(1)))))
	return 1
}

func mathCos(L *LState) int {
	x := float64(L.CheckNumber(1))
	L.Push(LNumber(hardwareNaN(math.Cos(x), x))) // patched for luamcp
	return 1
}

func mathCosh(L *LState) int {
	L.Push(LNumber(math.Cosh(float64(L.CheckNumber(1)))))
	return 1
}

func mathDeg(L *LState) int {
	L.Push(LNumber(float64(L.CheckNumber(1)) * 180 / math.Pi))
	return 1
}

func mathExp(L *LState) int {
	L.Push(LNumber(math.Exp(float64(L.CheckNumber(1)))))
	return 1
}

func mathFloor(L *LState) int {
	L.Push(LNumber(math.Floor(float64(L.CheckNumber(1)))))
	return 1
}

// patched for luamcp: as C's fmod (glibc), which Lua 5.1 calls, a NaN result
// is (x*y)/(x*y), the NaN the hardware makes (-nan on x86-64:
// math.fmod(5, 0)); Go's math.Mod returns its own NaN (nan).
func mathFmod(L *LState) int {
	x, y := float64(L.CheckNumber(1)), float64(L.CheckNumber(2))
	v := math.Mod(x, y)
	if v != v {
		v = (x * y) / (x * y)
	}
	L.Push(LNumber(v))
	return 1
}

func mathFrexp(L *LState) int {
	v1, v2 := math.Frexp(float64(L.CheckNumber(1)))
	L.Push(LNumber(v1))
	L.Push(LNumber(v2))
	return 2
}

func mathLdexp(L *LState) int {
	L.Push(LNumber(math.Ldexp(float64(L.CheckNumber(1)), L.CheckInt(2))))
	return 1
}

func mathLog(L *LState) int {
	x := float64(L.CheckNumber(1))
	L.Push(LNumber(hardwareNaN(math.Log(x), x))) // patched for luamcp
	return 1
}

func mathLog10(L *LState) int {
	L.Push(LNumber(math.Log10(float64(L.CheckNumber(1)))))
	return 1
}

// patched for luamcp: no argument is Lua 5.1's "bad argument #1 to 'max'
// (number expected, got no value)" (CheckNumber's), not "wrong number of
// arguments".
func mathMax(L *LState) int {
	max := L.CheckNumber(1)
	top := L.GetTop()
	for i := 2; i <= top; i++ {
		v := L.CheckNumber(i)
		if v > max {
			max = v
		}
	}
	L.Push(max)
	return 1
}

// patched for luamcp: no argument is Lua 5.1's "bad argument #1 to 'max'
// (number expected, got no value)" (CheckNumber's), not "wrong number of
// arguments".
func mathMin(L *LState) int {
	min := L.CheckNumber(1)
	top := L.GetTop()
	for i := 2; i <= top; i++ {
		v := L.CheckNumber(i)
		if v < min {
			min = v
		}
	}
	L.Push(min)
	return 1
}

// patched for luamcp: as C's modf, an infinity's fractional part is 0 of its
// sign (Go's math.Modf gives NaN: math.modf(1/0) was inf, nan).
func mathModf(L *LState) int {
	x := float64(L.CheckNumber(1))
	v1, v2 := math.Modf(x)
	if math.IsInf(x, 0) {
		v2 = math.Copysign(0, x)
	}
	L.Push(LNumber(v1))
	L.Push(LNumber(v2))
	return 2
}

// luaPow is C's pow (glibc), which Lua 5.1's ^ and math.pow call: an invalid
// operation (a negative number to a fractional power) gives the NaN the
// hardware makes, -nan on x86-64, where Go's math.Pow returns its own (nan).
// Patched for luamcp.
func luaPow(x, y float64) float64 {
	v := math.Pow(x, y)
	if v != v && x == x && y == y {
		z := x - x
		v = z / z
	}
	return v
}

// hardwareNaN is v, or the NaN the hardware makes (-nan on x86-64) when v is
// a NaN that x is not: what glibc's log, sin, cos and tan return for
// a negative number or an infinity, which Lua 5.1 prints -nan, where Go's
// functions return their own NaN (nan). Patched for luamcp.
func hardwareNaN(v, x float64) float64 {
	if v != v && x == x {
		z := x - x // 0, or the hardware's NaN for an infinity
		return z / z
	}
	return v
}

func mathPow(L *LState) int {
	L.Push(LNumber(luaPow(float64(L.CheckNumber(1)), float64(L.CheckNumber(2)))))
	return 1
}

func mathRad(L *LState) int {
	L.Push(LNumber(float64(L.CheckNumber(1)) * math.Pi / 180))
	return 1
}

func mathRandom(L *LState) int {
	switch L.GetTop() {
	case 0:
		if r := L.G.rng; r != nil {
			L.Push(LNumber(r.Float64()))
		} else {
			L.Push(LNumber(rand.Float64()))
		}
	// patched for luamcp: an empty interval is Lua 5.1's argument error,
	// not rand.Intn's Go panic ("invalid argument to Intn"), and an
	// interval wider than an int no longer overflows into one.
	case 1:
		n := L.CheckInt64(1)
		if n < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(LNumber(randomIn(L.G.rng, 1, n)))
	case 2:
		min := L.CheckInt64(1)
		max := L.CheckInt64(2)
		if min > max {
			L.ArgError(2, "interval is empty")
		}
		L.Push(LNumber(randomIn(L.G.rng, min, max)))
	default: // patched for luamcp: as Lua 5.1 (upstream ignored the rest)
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

// randomIn returns a uniformly random integer in [min, max], min <= max,
// drawn from r, or from the process's generator when r is nil.
func randomIn(r *rand.Rand, min, max int64) int64 {
	uint64n, int64n := rand.Uint64, rand.Int64N
	if r != nil {
		uint64n, int64n = r.Uint64, r.Int64N
	}
	span := uint64(max) - uint64(min) + 1 // 0: the whole range of int64
	if span == 0 {
		return int64(uint64n())
	}
	if span <= math.MaxInt64 {
		return min + int64n(int64(span))
	}
	for { // more than half of all values: rejection takes few draws
		if x := uint64n(); x < span {
			return min + int64(x)
		}
	}
}

// patched for luamcp: math.randomseed(x) seeds a generator of this state's
// own, so that the same seed gives the same sequence, as in Lua 5.1.
// Upstream seeded the process's generator, which Go (1.24 and later) ignores:
// a seeded script got other numbers on every run, and, where it did not,
// one state's seed would have steered every other's numbers. Until a state
// seeds one, it draws from the process's generator (randomly seeded).
func mathRandomseed(L *LState) int {
	seed := uint64(L.CheckInt64(1))
	L.G.rngSrc = rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	L.G.rng = rand.New(L.G.rngSrc)
	return 0
}

// RandomState is patched for luamcp: the state of the generator
// math.randomseed made, so that a state given to another user can draw as
// it did when it was recorded (the zero value: from the process's
// generator, as a state that never seeded).
type RandomState struct {
	seeded bool
	pcg    rand.PCG
}

// RandomState returns the state of ls's generator (see [RandomState]).
func (ls *LState) RandomState() RandomState {
	if ls.G.rngSrc == nil {
		return RandomState{}
	}
	return RandomState{seeded: true, pcg: *ls.G.rngSrc}
}

// SetRandomState makes ls's generator draw as it did when s was saved.
func (ls *LState) SetRandomState(s RandomState) {
	if !s.seeded {
		ls.G.rng, ls.G.rngSrc = nil, nil
		return
	}
	pcg := s.pcg
	ls.G.rngSrc = &pcg
	ls.G.rng = rand.New(ls.G.rngSrc)
}

func mathSin(L *LState) int {
	x := float64(L.CheckNumber(1))
	L.Push(LNumber(hardwareNaN(math.Sin(x), x))) // patched for luamcp
	return 1
}

func mathSinh(L *LState) int {
	L.Push(LNumber(math.Sinh(float64(L.CheckNumber(1)))))
	return 1
}

func mathSqrt(L *LState) int {
	L.Push(LNumber(math.Sqrt(float64(L.CheckNumber(1)))))
	return 1
}

func mathTan(L *LState) int {
	x := float64(L.CheckNumber(1))
	L.Push(LNumber(hardwareNaN(math.Tan(x), x))) // patched for luamcp
	return 1
}

func mathTanh(L *LState) int {
	L.Push(LNumber(math.Tanh(float64(L.CheckNumber(1)))))
	return 1
}

//
