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
	s := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\r', '\n':
			return -1
		}
		return r
	}, L.CheckString(1))
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
	if err != nil {
		return fail(L, "base64: %v", err)
	}
	L.Push(lua.LString(b))
	return 1
}
