package lua

// patched for luamcp: string.format formats as Lua does. Upstream handed the
// format string and the Lua values to Go's fmt.Sprintf: Go's verbs worked
// (%v, %T and %#v printed Go type names and struct fields, %p addresses), a
// missing or mistyped argument printed "%!d(MISSING)" instead of raising,
// %q quoted as Go does (not loadable by Lua), %g printed the shortest
// representation instead of 6 significant digits, and %s widths counted
// runes. Here each conversion is parsed as Lua 5.1's strfrmt does, checks its
// argument as luaL_checknumber would, and is formatted as C's printf.

import (
	"math"
	"strconv"
	"strings"
)

// formatSpec is one conversion: %[flags][width][.precision]verb.
type formatSpec struct {
	flags     string
	width     int  // -1: none
	precision int  // -1: none
	verb      byte // one of "cdiouxXeEfgGqs"
}

// strFormatLua formats f with the arguments from index 2 on. formatSize has
// already bounded widths and precisions to two digits.
func strFormatLua(L *LState, f string) string {
	var b strings.Builder
	b.Grow(len(f))
	arg := 1
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			b.WriteByte('%')
			continue
		}
		arg++
		if arg > L.GetTop() {
			L.ArgError(arg, "no value") // checked first, as Lua 5.1's strfrmt
		}
		spec := formatSpec{width: -1, precision: -1}
		start := i
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		spec.flags = f[start:i]
		if n, ok := formatNumber(f, &i); ok {
			spec.width = n
		}
		if i < len(f) && f[i] == '.' {
			i++
			n, _ := formatNumber(f, &i)
			spec.precision = n // "%.f" is precision 0, as in C
		}
		if i >= len(f) || strings.IndexByte("cdiouxXeEfgGqs", f[i]) < 0 {
			opt := "%" + f[start:min(i+1, len(f))]
			L.RaiseError("invalid option '%s' to 'format'", opt)
		}
		spec.verb = f[i]
		formatOne(L, &b, spec, arg)
	}
	return b.String()
}

// formatNumber reads the run of digits at *i (formatSize has refused runs
// longer than two).
func formatNumber(f string, i *int) (int, bool) {
	start := *i
	n := 0
	for *i < len(f) && f[*i] >= '0' && f[*i] <= '9' {
		n = n*10 + int(f[*i]-'0')
		*i++
	}
	return n, *i > start
}

// formatOne appends argument arg formatted by spec.
func formatOne(L *LState, b *strings.Builder, spec formatSpec, arg int) {
	switch spec.verb {
	case 'c':
		formatPad(b, spec, string([]byte{byte(formatInt(L, arg))}))
	case 'd', 'i':
		n := formatInt(L, arg)
		formatPad(b, spec, formatInteger(spec, n < 0, strconv.FormatUint(absUint(n), 10), ""))
	case 'o', 'u', 'x', 'X':
		u := formatUint(L, arg)
		var digits, prefix string
		switch spec.verb {
		case 'o':
			digits = strconv.FormatUint(u, 8)
			if strings.IndexByte(spec.flags, '#') >= 0 {
				prefix = "0" // formatInteger drops it if the digits start with 0
			}
		case 'u':
			digits = strconv.FormatUint(u, 10)
		case 'x', 'X':
			digits = strconv.FormatUint(u, 16)
			if strings.IndexByte(spec.flags, '#') >= 0 && u != 0 {
				prefix = "0x"
			}
			if spec.verb == 'X' {
				digits, prefix = strings.ToUpper(digits), strings.ToUpper(prefix)
			}
		}
		spec.flags = strings.NewReplacer("+", "", " ", "").Replace(spec.flags) // unsigned: no sign
		formatPad(b, spec, formatInteger(spec, false, digits, prefix))
	case 'e', 'E', 'f', 'g', 'G':
		formatFloat(b, spec, float64(L.CheckNumber(arg)))
	case 'q':
		formatQuoted(b, L.CheckString(arg))
	case 's':
		s := formatString(L, arg)
		if spec.precision >= 0 && len(s) > spec.precision {
			s = s[:spec.precision]
		}
		formatPad(b, spec, s)
	}
}

// formatInt reads argument arg as C's (long) cast of a lua_Number: NaN and
// values out of range become the smallest int64, as on amd64.
func formatInt(L *LState, arg int) int64 {
	n := float64(L.CheckNumber(arg))
	if n != n || n >= 9223372036854775808.0 || n < -9223372036854775808.0 {
		return math.MinInt64
	}
	return int64(n)
}

// formatUint reads argument arg as C's (unsigned long) cast of a lua_Number
// on amd64, where Lua 5.1 prints %o, %u, %x and %X: below 2^63 as the (long)
// cast; from 2^63 on, the number less 2^63 is cast and its top bit flipped, so
// numbers up to 2^64 keep their value and larger ones and +inf are 0.
func formatUint(L *LState, arg int) uint64 {
	n := float64(L.CheckNumber(arg))
	if n < 0x1p63 || n != n {
		return uint64(toInteger(LNumber(n)))
	}
	return uint64(toInteger(LNumber(n-0x1p63))) ^ 1<<63
}

// absUint is |n| as an unsigned integer (|MinInt64| included).
func absUint(n int64) uint64 {
	if n < 0 {
		return uint64(-(n + 1)) + 1
	}
	return uint64(n)
}

// formatInteger applies the precision (minimum digits), the sign flags and
// zero padding to digits, as printf does for integers.
func formatInteger(spec formatSpec, negative bool, digits, prefix string) string {
	if spec.precision >= 0 {
		if spec.precision == 0 && digits == "0" {
			digits = ""
		}
		if len(digits) < spec.precision {
			digits = strings.Repeat("0", spec.precision-len(digits)) + digits
		}
	}
	if prefix == "0" && strings.HasPrefix(digits, "0") {
		prefix = "" // %#o: one leading zero, unless the precision gave one
	}
	sign := formatSign(spec, negative)
	// '0' pads with zeros after the sign, unless '-' or a precision is set.
	if spec.width > 0 && strings.IndexByte(spec.flags, '0') >= 0 && strings.IndexByte(spec.flags, '-') < 0 && spec.precision < 0 {
		if n := spec.width - len(sign) - len(prefix) - len(digits); n > 0 {
			digits = strings.Repeat("0", n) + digits
		}
	}
	return sign + prefix + digits
}

// formatSign is the sign a number's text starts with.
func formatSign(spec formatSpec, negative bool) string {
	switch {
	case negative:
		return "-"
	case strings.IndexByte(spec.flags, '+') >= 0:
		return "+"
	case strings.IndexByte(spec.flags, ' ') >= 0:
		return " "
	}
	return ""
}

// formatFloat formats x as %e, %f or %g do in C: a precision of 6 unless
// given, inf and nan spelled as glibc spells them.
func formatFloat(b *strings.Builder, spec formatSpec, x float64) {
	upper := spec.verb == 'E' || spec.verb == 'G'
	if math.IsInf(x, 0) || math.IsNaN(x) {
		text := "inf"
		if math.IsNaN(x) {
			text = "nan"
		}
		if upper {
			text = strings.ToUpper(text)
		}
		spec.flags = strings.ReplaceAll(spec.flags, "0", "") // no zero padding
		formatPad(b, spec, formatSign(spec, math.Signbit(x))+text)
		return
	}
	prec := spec.precision
	if prec < 0 {
		prec = 6
	}
	alt := strings.IndexByte(spec.flags, '#') >= 0
	var digits string
	switch spec.verb {
	case 'e', 'E':
		digits = formatExp(strconv.FormatFloat(math.Abs(x), 'e', prec, 64))
		if alt && prec == 0 {
			digits = strings.Replace(digits, "e", ".e", 1)
		}
	case 'f':
		digits = strconv.FormatFloat(math.Abs(x), 'f', prec, 64)
		if alt && prec == 0 {
			digits += "."
		}
	case 'g', 'G':
		digits = formatG(math.Abs(x), prec, alt)
	}
	if upper {
		digits = strings.ToUpper(digits)
	}
	sign := formatSign(spec, math.Signbit(x))
	if spec.width > 0 && strings.IndexByte(spec.flags, '0') >= 0 && strings.IndexByte(spec.flags, '-') < 0 {
		if n := spec.width - len(sign) - len(digits); n > 0 {
			digits = strings.Repeat("0", n) + digits
		}
	}
	formatPad(b, spec, sign+digits)
}

// formatExp writes Go's exponent (e+5, at least one digit) as C's: at least
// two digits.
func formatExp(s string) string {
	i := strings.LastIndexAny(s, "e")
	if i < 0 || len(s)-i-2 >= 2 {
		return s
	}
	return s[:i+2] + "0" + s[i+2:]
}

// formatG is C's %g of x >= 0: %e or %f by the exponent, prec significant
// digits (0 counts as 1), trailing zeros removed unless alt.
func formatG(x float64, prec int, alt bool) string {
	if prec == 0 {
		prec = 1
	}
	exp := 0
	if x != 0 {
		e := strconv.FormatFloat(x, 'e', prec-1, 64)
		exp, _ = strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	}
	var s string
	if exp < -4 || exp >= prec {
		s = strconv.FormatFloat(x, 'e', prec-1, 64)
		i := strings.IndexByte(s, 'e')
		if !alt {
			s = trimFraction(s[:i]) + s[i:]
		} else if strings.IndexByte(s[:i], '.') < 0 {
			s = s[:i] + "." + s[i:] // %#.1g of 42 is 4.e+01, as %#.0e
		}
		return formatExp(s)
	}
	s = strconv.FormatFloat(x, 'f', prec-1-exp, 64)
	if !alt {
		s = trimFraction(s)
	} else if strings.IndexByte(s, '.') < 0 {
		s += "."
	}
	return s
}

// trimFraction drops trailing zeros of a fraction, and its point if nothing
// is left of it.
func trimFraction(s string) string {
	if strings.IndexByte(s, '.') < 0 {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// formatQuoted is Lua 5.1's %q: a string Lua reads back as s.
func formatQuoted(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\r':
			b.WriteString(`\r`)
		case 0:
			b.WriteString(`\000`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// formatString is argument arg as %s shows it: a string or a number as
// it is, anything else as tostring shows it (Lua 5.2's %s; 5.1 raised).
func formatString(L *LState, arg int) string {
	switch v := L.Get(arg).(type) {
	case LString:
		return string(v)
	case LNumber:
		return v.String()
	}
	if arg > L.GetTop() {
		L.ArgError(arg, "no value")
	}
	switch v := L.ToStringMeta(L.Get(arg)).(type) {
	case LString:
		// Made by __tostring (charged there) or by tostring's own
		// "table: 0x..." (small): formatSize charged 512 bytes for it,
		// the excess is charged here before it is copied.
		if n := len(v) - 512; n > 0 {
			L.charge(n)
		}
		return string(v)
	case LNumber:
		return v.String()
	}
	L.ArgError(arg, "'__tostring' must return a string")
	return ""
}

// formatPad pads s with spaces to the spec's width, on the left unless the
// '-' flag is set; widths count bytes, as in C.
func formatPad(b *strings.Builder, spec formatSpec, s string) {
	pad := spec.width - len(s)
	if pad <= 0 {
		b.WriteString(s)
		return
	}
	if strings.IndexByte(spec.flags, '-') >= 0 {
		b.WriteString(s)
		b.WriteString(strings.Repeat(" ", pad))
		return
	}
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteString(s)
}
