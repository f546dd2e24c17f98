package lua

// patched for luamcp: the conversion of a string to a number, as Lua does it
// (luaO_str2d), for tonumber, arithmetic on strings and numeric literals.
// Upstream tried strconv.ParseInt with base 0, then strconv.ParseFloat: Go's
// number syntax, not Lua's. "017" + 0 was 15 (octal), "0b101" + 0 was 5,
// "1_000" + 0 was 1000, and tonumber (which upstream wrote apart, with
// strconv.ParseInt unless the text held a dot) returned nil for "1e5", for
// integers past 2^63 and for " 10\r", and nil instead of an error for a
// base out of range.

import (
	"math"
	"strconv"
)

// isLuaSpace reports whether c is a space to C's isspace, which Lua's
// conversions skip around a number.
func isLuaSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// trimLuaSpace cuts the spaces (isLuaSpace) at both ends of s.
func trimLuaSpace(s string) string {
	for len(s) > 0 && isLuaSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isLuaSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// str2number converts s as Lua does: spaces around it, an optional sign,
// then a decimal number (digits with an optional point and exponent) or a
// hexadecimal one (0x, hex digits with an optional point and binary
// exponent p). Nothing else: no octal, no binary, no digit separators, and
// no "inf" or "nan" (which C's strtod would take: Lua 5.2 refuses them too).
// A decimal number too large for a float64 is an infinity, as strtod's.
func str2number(s string) (LNumber, bool) {
	s = trimLuaSpace(s)
	body := s
	if len(body) > 0 && (body[0] == '-' || body[0] == '+') {
		body = body[1:]
	}
	if len(body) > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		v, ok := hex2number(body[2:])
		if ok && s[0] == '-' {
			v = -v
		}
		return LNumber(v), ok
	}
	if !decimalSyntax(body) {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(v, 0) { // out of range: ±Inf, as strtod
		return 0, false
	}
	return LNumber(v), true
}

// decimalSyntax reports whether s is digits, an optional point and digits
// (at least one digit in all), and an optional exponent: the subset of
// strconv.ParseFloat's syntax that Lua reads.
func decimalSyntax(s string) bool {
	i, digits := 0, 0
	for i < len(s) && isDigit(s[i]) {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// hex2number reads the part of a hexadecimal number after its 0x: hex
// digits, an optional point and hex digits (at least one digit in all), an
// optional binary exponent (p, an optional sign, decimal digits).
func hex2number(s string) (float64, bool) {
	var v float64
	i, digits, exp := 0, 0, 0
	for i < len(s) && hexDigit(s[i]) >= 0 {
		v = v*16 + float64(hexDigit(s[i]))
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && hexDigit(s[i]) >= 0 {
			v = v*16 + float64(hexDigit(s[i]))
			i, digits, exp = i+1, digits+1, exp-4
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'p' || s[i] == 'P') {
		i++
		neg := false
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			neg = s[i] == '-'
			i++
		}
		start, e := i, 0
		for i < len(s) && isDigit(s[i]) {
			if e < 1<<20 { // past any float64's range: stop counting
				e = e*10 + int(s[i]-'0')
			}
			i++
		}
		if i == start {
			return 0, false
		}
		if neg {
			e = -e
		}
		exp += e
	}
	if i != len(s) {
		return 0, false
	}
	return math.Ldexp(v, exp), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// hexDigit is c's value as a hexadecimal digit, -1 when it is none.
func hexDigit(c byte) int {
	if d := baseDigit(c); d < 16 {
		return d
	}
	return -1
}

// baseDigit is c's value as a digit of bases up to 36 (0-9, then a-z or
// A-Z), -1 when c is no letter or digit.
func baseDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return -1
}

// str2numberBase converts s in base (2 to 36) as Lua 5.2's tonumber does:
// spaces around it, an optional minus, then letters and digits that are
// all digits of base; the value is accumulated as a float, so a long number
// loses precision rather than failing.
func str2numberBase(s string, base int) (LNumber, bool) {
	s = trimLuaSpace(s)
	neg := false
	if len(s) > 0 && s[0] == '-' {
		neg, s = true, s[1:]
	}
	if s == "" {
		return 0, false
	}
	var v float64
	for i := 0; i < len(s); i++ {
		d := baseDigit(s[i])
		if d < 0 || d >= base {
			return 0, false
		}
		v = v*float64(base) + float64(d)
	}
	if neg {
		v = -v
	}
	return LNumber(v), true
}
