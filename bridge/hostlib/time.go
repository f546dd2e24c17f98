package hostlib

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// timeModule is `time`: Unix time in seconds (a float, to the nanosecond as
// far as a float64 holds it) and milliseconds, and Go's layouts to format and
// parse it. Formatting is in UTC.
var timeModule = module{
	funcs: []function{
		{"now", func(_ *State, L *lua.LState) int {
			L.Push(lua.LNumber(float64(time.Now().UnixNano()) / 1e9))
			return 1
		}},
		{"ms", func(_ *State, L *lua.LState) int {
			L.Push(lua.LNumber(time.Now().UnixMilli()))
			return 1
		}},
		{"format", timeFormat},
		{"parse", timeParse},
	},
}

// namedLayouts are the names time.format and time.parse accept besides a Go
// layout: the names of Go's constants, and HTTP, the date HTTP headers carry
// (RFC 9110: RFC1123 with GMT, where RFC1123 writes UTC).
var namedLayouts = map[string]string{
	"HTTP":        http.TimeFormat,
	"RFC3339":     time.RFC3339,
	"RFC3339Nano": time.RFC3339Nano,
	"RFC1123":     time.RFC1123,
	"RFC1123Z":    time.RFC1123Z,
	"RFC822":      time.RFC822,
	"RFC822Z":     time.RFC822Z,
	"RFC850":      time.RFC850,
	"ANSIC":       time.ANSIC,
	"UnixDate":    time.UnixDate,
	"Kitchen":     time.Kitchen,
	"DateTime":    time.DateTime,
	"DateOnly":    time.DateOnly,
	"TimeOnly":    time.TimeOnly,
}

// layoutArg reads the optional layout argument n (default RFC 3339).
func layoutArg(L *lua.LState, n int) string {
	layout := L.OptString(n, time.RFC3339)
	if named, ok := namedLayouts[layout]; ok {
		return named
	}
	if len(layout) > 256 {
		L.ArgError(n, "layout longer than 256 bytes")
	}
	return layout
}

// time.format(t [, layout]) -> text, t in Unix seconds, in UTC.
func timeFormat(_ *State, L *lua.LState) int {
	t := float64(L.CheckNumber(1))
	if math.IsNaN(t) || math.Abs(t) > 1e15 {
		L.ArgError(1, "a Unix time in seconds expected")
	}
	layout := layoutArg(L, 2)
	tm := unixTime(t)
	// RFC 3339 writes the year in four digits: Go would write 10000 or
	// -0001, which no RFC 3339 parser (time.parse included) reads back.
	if (layout == time.RFC3339 || layout == time.RFC3339Nano) && (tm.Year() < 0 || tm.Year() > 9999) {
		L.ArgError(1, "a time from year 0 to 9999 expected (RFC 3339 has four digits for the year)")
	}
	keepString(L, "time.format", tm.Format(layout))
	return 1
}

// unixTime is the time t seconds after the Unix epoch, to the digits t
// holds: the shortest decimal that reads back as t, cut at the nanosecond.
// A float of 1.7e9 is only within 2.4e-7 of the time it was written from
// (1700000000.123 is 1700000000.12299990654), so its exact binary value
// would format as .122 what time.parse read from .123.
func unixTime(t float64) time.Time {
	text := strconv.FormatFloat(math.Abs(t), 'f', -1, 64)
	whole, frac, _ := strings.Cut(text, ".")
	sec, _ := strconv.ParseInt(whole, 10, 64) // |t| <= 1e15: always an integer
	frac = (frac + "000000000")[:9]
	nsec, _ := strconv.ParseInt(frac, 10, 64)
	if t < 0 {
		sec, nsec = -sec, -nsec
	}
	return time.Unix(sec, nsec).UTC()
}

// time.parse(text [, layout]) -> Unix seconds | nil, message. A text without
// a zone is read as UTC. Whole seconds are an integer.
//
// A zone written as an abbreviation (layout MST) gives no offset by itself:
// Go's time.Parse looks it up in the process's local zone, and reads one it
// does not find there as UTC, so "10:00 PST" was 10:00 UTC on a server in
// UTC and 18:00 UTC on one in Los Angeles, and "EST" was UTC on both. The
// text is read in UTC, and an abbreviation other than UTC and GMT, with no
// numeric offset beside it, is nil, message.
func timeParse(_ *State, L *lua.LState) int {
	s := L.CheckString(1)
	layout := layoutArg(L, 2)
	if len(s) > 1024 {
		return fail(L, "time: text longer than 1024 bytes")
	}
	tm, err := time.ParseInLocation(layout, strings.TrimSpace(s), time.UTC)
	if err != nil {
		return fail(L, "time: %v", err)
	}
	if name, _ := tm.Zone(); !utcZone(name) && !numericZone(layout) {
		return fail(L, "time: parsing time %q: unknown offset of the time zone %q (give the offset as a number: layout -0700 or Z07:00)", s, name)
	}
	if tm.Nanosecond() == 0 {
		L.Push(lua.LNumber(tm.Unix()))
	} else {
		L.Push(lua.LNumber(float64(tm.Unix()) + float64(tm.Nanosecond())/1e9))
	}
	return 1
}

// utcZone reports whether name, the zone of a time parsed in UTC from a
// layout without a numeric zone, is UTC's. Any other is an abbreviation Go
// made a zone of: of offset 0 whatever it names, or, for "GMT+3", of
// offset +3 hours without moving the time (and POSIX's GMT+3 is UTC-3).
func utcZone(name string) bool {
	switch name {
	case "", "UTC", "UT", "GMT", "Z":
		return true
	}
	return false
}

// numericZone reports whether layout has a numeric zone element (-0700,
// -07:00, -07, Z0700, Z07:00, ...): then the text gave the offset, and a zone
// abbreviation beside it only names it.
func numericZone(layout string) bool {
	return strings.Contains(layout, "-07") || strings.Contains(layout, "Z07")
}
