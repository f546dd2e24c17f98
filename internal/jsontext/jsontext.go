// Package jsontext writes JSON string literals. The transport (package mcp)
// and the Lua bridge (package bridge) both build JSON by hand on their hot
// paths; this is the one escaper they share.
package jsontext

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s to dst as a JSON string literal. Quotes, backslashes,
// control characters, U+2028 and U+2029 are escaped (the last two are valid
// JSON but not JavaScript source before ES2019); HTML characters are not.
// Invalid UTF-8 is written as U+FFFD and reported with valid == false, so a
// caller can choose between repairing and refusing.
func AppendString(dst []byte, s string) (out []byte, valid bool) {
	valid = true
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			valid = false
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			start = i + size
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), valid
}

// Len returns the length of the literal AppendString writes for s, without
// writing it: an escape makes one byte six ("\u0001"), so a caller bounding
// what it builds cannot go by len(s).
func Len(s string) int {
	n := 2 // the quotes
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c != '"' && c != '\\':
				n++
			case c == '"', c == '\\', c == '\n', c == '\r', c == '\t', c == '\b', c == '\f':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
