package hostlib

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"

	lua "github.com/yuin/gopher-lua"
)

// maxRandomBytes bounds crypto.random_bytes and crypto.random_hex.
const maxRandomBytes = 1 << 20

// digests are the hash functions of `crypto` and `crypto.raw`.
var digests = []struct {
	name string
	new  func() hash.Hash
}{
	{"sha256", sha256.New},
	{"sha512", sha512.New},
	{"sha1", sha1.New},
	{"md5", md5.New},
}

// cryptoModule is `crypto`: digests and HMACs as lower-case hex (crypto.raw
// has the same functions returning bytes), and random bytes from the
// operating system's generator. sha1 and md5 are there for the protocols
// that still use them (ETags, legacy signatures), not for security.
var cryptoModule = module{
	funcs: append(digestFuncs(hex.EncodeToString),
		function{"random_bytes", func(_ *State, L *lua.LState) int {
			L.Push(lua.LString(randomBytes(L, 1, "crypto.random_bytes")))
			return 1
		}},
		function{"random_hex", func(_ *State, L *lua.LState) int {
			L.Push(lua.LString(hex.EncodeToString(randomBytes(L, 2, "crypto.random_hex"))))
			return 1
		}},
		function{"uuid", func(_ *State, L *lua.LState) int {
			keepString(L, "crypto.uuid", uuid4())
			return 1
		}},
	),
	extra: func(s *State, t *lua.LTable) {
		raw := s.L.CreateTable(0, 2*len(digests))
		for _, f := range digestFuncs(func(b []byte) string { return string(b) }) {
			s.setFunc(raw, "crypto.raw."+f.name, f)
		}
		t.RawSetString("raw", raw)
	},
	more: func() []string {
		var names []string
		for _, f := range digestFuncs(nil) {
			names = append(names, "raw."+f.name)
		}
		return names
	}(),
}

// digestFuncs returns name(s) and hmac_name(key, msg) for every digest,
// formatting the sum with format. A sum is small, but a script may keep
// millions: it is charged like any string.
func digestFuncs(format func([]byte) string) []function {
	var fns []function
	for _, d := range digests {
		newHash, name, hmacName := d.new, "crypto."+d.name, "crypto.hmac_"+d.name
		fns = append(fns,
			function{d.name, func(_ *State, L *lua.LState) int {
				h := newHash()
				h.Write([]byte(L.CheckString(1)))
				keepString(L, name, format(h.Sum(nil)))
				return 1
			}},
			function{"hmac_" + d.name, func(_ *State, L *lua.LState) int {
				h := hmac.New(newHash, []byte(L.CheckString(1)))
				h.Write([]byte(L.CheckString(2)))
				keepString(L, hmacName, format(h.Sum(nil)))
				return 1
			}},
		)
	}
	return fns
}

// randomBytes reads argument 1 (a count from 0 to maxRandomBytes) and returns
// that many random bytes, once a result of scale bytes a byte is charged to
// the memory budget (past it, it raises).
func randomBytes(L *lua.LState, scale int, what string) []byte {
	n := int(intArg(L, 1, 0, maxRandomBytes))
	if err := keep(L, what, scale*n); err != nil {
		L.RaiseError("%v", err)
	}
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return b
}

// uuid4 returns a random (version 4) UUID in its canonical text form.
func uuid4() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant RFC 4122
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}
