package hostlib

import (
	"encoding/base64"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// base64Module is `base64`: the standard alphabet (RFC 4648 §4, padded) and
// the URL-safe one (§5, unpadded, as in JWTs). Decoding accepts text with or
// without padding, and ignores line breaks and spaces; padding, when there is
// some, is what completes the text to a multiple of 4 characters.
var base64Module = module{
	funcs: []function{
		{"encode", func(_ *State, L *lua.LState) int { return base64Encode(L, base64.StdEncoding, "base64.encode") }},
		{"decode", func(_ *State, L *lua.LState) int { return base64Decode(L, base64.RawStdEncoding, "base64.decode") }},
		{"url_encode", func(_ *State, L *lua.LState) int { return base64Encode(L, base64.RawURLEncoding, "base64.url_encode") }},
		{"url_decode", func(_ *State, L *lua.LState) int { return base64Decode(L, base64.RawURLEncoding, "base64.url_decode") }},
	},
}

// base64Encode encodes argument 1 with enc. The text is a third larger than
// the bytes and is charged to the memory budget first; past it, it raises.
func base64Encode(L *lua.LState, enc *base64.Encoding, what string) int {
	s := L.CheckString(1)
	if err := keep(L, what, enc.EncodedLen(len(s))); err != nil {
		L.RaiseError("%v", err)
	}
	L.Push(lua.LString(enc.EncodeToString([]byte(s))))
	return 1
}

// base64Decode decodes argument 1 with enc (an unpadded encoding) once
// whitespace and padding are removed: the bytes, or nil, message. The bytes
// are charged to the memory budget first; past it, nil, message.
func base64Decode(L *lua.LState, enc *base64.Encoding, what string) int {
	in := L.CheckString(1)
	// Byte by byte: strings.Map would make each invalid UTF-8 byte three.
	kept := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		if !isSpace(in[i]) {
			kept = append(kept, in[i])
		}
	}
	s := string(kept)
	// Padding completes the last group of 4 characters, with one or two
	// '=': "Zg=", "Zm9v==" and "=" are no encoding of anything.
	trimmed := strings.TrimRight(s, "=")
	if pad := len(s) - len(trimmed); pad > 0 && (pad > 2 || len(s)%4 != 0) {
		return fail(L, "base64: bad padding: %d '=' after %d characters (padding completes a group of 4)", pad, len(trimmed))
	}
	s = trimmed
	if err := keep(L, what, enc.DecodedLen(len(s))); err != nil {
		return fail(L, "%v", err)
	}
	b, err := enc.DecodeString(s)
	if ce, ok := err.(base64.CorruptInputError); ok {
		// Go counts from the text without its spaces: say where it is in
		// what the script gave, and what is wrong there.
		at, c := inputOffset(in, int(ce)), s[ce]
		if strings.IndexByte(alphabet(enc), c) >= 0 {
			return fail(L, "base64: the text ends in a lone character (byte %d): it is cut short", at)
		}
		if c >= 0x20 && c < 0x7f {
			return fail(L, "base64: invalid character %q at byte %d", rune(c), at)
		}
		return fail(L, "base64: invalid byte 0x%02x at byte %d", c, at)
	}
	if err != nil {
		return fail(L, "base64: %v", err)
	}
	L.Push(lua.LString(b))
	return 1
}

// isSpace reports whether c is a space decoding ignores.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// inputOffset is the offset in in of the byte at offset n of in without
// its spaces.
func inputOffset(in string, n int) int {
	for i := 0; i < len(in); i++ {
		if isSpace(in[i]) {
			continue
		}
		if n == 0 {
			return i
		}
		n--
	}
	return len(in)
}

// alphabet returns the 64 characters of enc.
func alphabet(enc *base64.Encoding) string {
	if enc == base64.RawURLEncoding {
		return "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	}
	return "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
}
