package lua

import (
	"math"
	"os"
	"strings"
	"time"
)

var startedAt time.Time

func init() {
	startedAt = time.Now()
}

// getIntField is Lua 5.1's getfield of os.time: a number or a numeric
// string, cast to a C int; anything else is v, or the error of a missing
// field when v is negative. Patched for luamcp: a value that is not a
// number was taken as v even for the required fields (day = "x" was a date),
// and an int of 64 bits let a year past the range of C's time a date Go's
// time wrapped around.
func getIntField(L *LState, tb *LTable, key string, v int) int {
	var n LNumber
	switch lv := tb.RawGetString(key).(type) {
	case LNumber:
		n = lv
	case LString:
		num, err := parseNumber(string(lv))
		if err != nil {
			return missingField(L, key, v)
		}
		n = num
	default:
		return missingField(L, key, v)
	}
	return int(int32(toInteger(n)))
}

// missingField is the value of a date field that is not a number: v, or
// the error when v is negative (day, month and year have no default).
func missingField(L *LState, key string, v int) int {
	if v < 0 {
		L.RaiseError("field '%s' missing in date table", key)
	}
	return v
}

func getBoolField(L *LState, tb *LTable, key string, v bool) bool {
	ret := tb.RawGetString(key)
	if lb, ok := ret.(LBool); ok {
		return bool(lb)
	}
	return v
}

func OpenOs(L *LState) int {
	osmod := L.RegisterModule(OsLibName, osFuncs)
	L.Push(osmod)
	return 1
}

var osFuncs = map[string]LGFunction{
	"clock":     osClock,
	"difftime":  osDiffTime,
	"execute":   osExecute,
	"exit":      osExit,
	"date":      osDate,
	"getenv":    osGetEnv,
	"remove":    osRemove,
	"rename":    osRename,
	"setenv":    osSetEnv,
	"setlocale": osSetLocale,
	"time":      osTime,
	"tmpname":   osTmpname,
}

func osClock(L *LState) int {
	L.Push(LNumber(float64(time.Now().Sub(startedAt)) / float64(time.Second)))
	return 1
}

// patched for luamcp: the second time is optional (0), as in Lua 5.1.
func osDiffTime(L *LState) int {
	L.Push(LNumber(L.CheckInt64(1) - L.OptInt64(2, 0)))
	return 1
}

func osExecute(L *LState) int {
	var procAttr os.ProcAttr
	procAttr.Files = []*os.File{os.Stdin, os.Stdout, os.Stderr}
	cmd, args := popenArgs(L.CheckString(1))
	args = append([]string{cmd}, args...)
	process, err := os.StartProcess(cmd, args, &procAttr)
	if err != nil {
		L.Push(LNumber(1))
		return 1
	}

	ps, err := process.Wait()
	if err != nil || !ps.Success() {
		L.Push(LNumber(1))
		return 1
	}
	L.Push(LNumber(0))
	return 1
}

func osExit(L *LState) int {
	L.Close()
	os.Exit(L.OptInt(1, 0))
	return 1
}

func osDate(L *LState) int {
	// patched for luamcp: as Lua 5.1's os_date, the format defaults to "%c"
	// (a nil one too), the time to now (a nil one too), one '!' asks for
	// UTC, "*t" alone asks for a table, whose yday and isdst are set
	// (upstream: yday 0, isdst false).
	t := time.Now()
	cfmt := L.OptString(1, "%c")
	isUTC := strings.HasPrefix(cfmt, "!")
	if isUTC {
		cfmt = cfmt[1:]
	}
	if L.Get(2) != LNil {
		// patched for luamcp: a time whose year C's struct tm cannot hold
		// (tm_year an int) is nil, as gmtime and localtime fail in Lua 5.1
		// (NaN and infinities are the least integer). Go's time wrapped
		// such seconds to a date of another year.
		s := L.CheckInt64(2)
		if s < -1<<62 || s > 1<<62 {
			L.Push(LNil)
			return 1
		}
		t = time.Unix(s, 0)
	}
	if isUTC {
		t = t.UTC()
	}
	if y := int64(t.Year()) - 1900; y < math.MinInt32 || y > math.MaxInt32 {
		L.Push(LNil)
		return 1
	}
	if cfmt == "*t" {
		ret := L.NewTable()
		ret.RawSetString("year", LNumber(t.Year()))
		ret.RawSetString("month", LNumber(t.Month()))
		ret.RawSetString("day", LNumber(t.Day()))
		ret.RawSetString("hour", LNumber(t.Hour()))
		ret.RawSetString("min", LNumber(t.Minute()))
		ret.RawSetString("sec", LNumber(t.Second()))
		ret.RawSetString("wday", LNumber(t.Weekday()+1))
		ret.RawSetString("yday", LNumber(t.YearDay()))
		ret.RawSetString("isdst", LBool(t.IsDST()))
		L.Push(ret)
		return 1
	}
	// Patched for luamcp: the result is charged before it is built (a
	// directive expands to 32 bytes at most), and built a piece at a time
	// with cancellation checks.
	L.charge(mulSize(len(cfmt), 16))
	var b strings.Builder
	for len(cfmt) > 0 {
		i := 0
		for i < len(cfmt) && i < 4096 {
			if cfmt[i] == '%' {
				i++
			}
			i++
		}
		i = min(i, len(cfmt))
		b.WriteString(strftime(t, cfmt[:i], isUTC))
		L.step(16 * i)
		cfmt = cfmt[i:]
	}
	L.Push(LString(b.String()))
	return 1
}

func osGetEnv(L *LState) int {
	v := os.Getenv(L.CheckString(1))
	if len(v) == 0 {
		L.Push(LNil)
	} else {
		L.Push(LString(v))
	}
	return 1
}

func osRemove(L *LState) int {
	err := os.Remove(L.CheckString(1))
	if err != nil {
		L.Push(LNil)
		L.Push(LString(err.Error()))
		return 2
	} else {
		L.Push(LTrue)
		return 1
	}
}

func osRename(L *LState) int {
	err := os.Rename(L.CheckString(1), L.CheckString(2))
	if err != nil {
		L.Push(LNil)
		L.Push(LString(err.Error()))
		return 2
	} else {
		L.Push(LTrue)
		return 1
	}
}

func osSetLocale(L *LState) int {
	// setlocale is not supported
	L.Push(LFalse)
	return 1
}

func osSetEnv(L *LState) int {
	err := os.Setenv(L.CheckString(1), L.CheckString(2))
	if err != nil {
		L.Push(LNil)
		L.Push(LString(err.Error()))
		return 2
	} else {
		L.Push(LTrue)
		return 1
	}
}

func osTime(L *LState) int {
	if L.GetTop() == 0 {
		L.Push(LNumber(time.Now().Unix()))
	} else {
		lv := L.CheckAny(1)
		if lv == LNil {
			L.Push(LNumber(time.Now().Unix()))
		} else {
			tbl, ok := lv.(*LTable)
			if !ok {
				L.TypeError(1, LTTable)
			}
			sec := getIntField(L, tbl, "sec", 0)
			min := getIntField(L, tbl, "min", 0)
			hour := getIntField(L, tbl, "hour", 12)
			// patched for luamcp: as in Lua 5.1, a date needs its day,
			// month and year (upstream read a missing one as -1: a time
			// in the year -1).
			day := getIntField(L, tbl, "day", -1)
			month := getIntField(L, tbl, "month", -1)
			year := getIntField(L, tbl, "year", -1)
			isdst := getBoolField(L, tbl, "isdst", false)
			t := time.Date(year, time.Month(month), day, hour, min, sec, 0, time.Local)
			// TODO dst
			if false {
				print(isdst)
			}
			L.Push(LNumber(t.Unix()))
		}
	}
	return 1
}

func osTmpname(L *LState) int {
	file, err := os.CreateTemp("", "")
	if err != nil {
		L.RaiseError("unable to generate a unique filename")
	}
	file.Close()
	os.Remove(file.Name()) // ignore errors
	L.Push(LString(file.Name()))
	return 1
}

//
