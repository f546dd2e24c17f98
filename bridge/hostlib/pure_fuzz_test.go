package hostlib

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// pcallMod runs module.fn(args...) protected: its results, or the message it
// raised.
func pcallMod(L *lua.LState, module, fn string, args ...lua.LValue) ([]lua.LValue, error) {
	f := L.GetGlobal(module).(*lua.LTable).RawGetString(fn)
	top := L.GetTop()
	if err := L.CallByParam(lua.P{Fn: f, NRet: lua.MultRet, Protect: true}, args...); err != nil {
		return nil, err
	}
	rets := make([]lua.LValue, 0, L.GetTop()-top)
	for i := top + 1; i <= L.GetTop(); i++ {
		rets = append(rets, L.Get(i))
	}
	L.SetTop(top)
	return rets, nil
}

// FuzzBase64: decoding any text never raises; it is the bytes Go's decoder
// reads from the text once spaces are dropped (with padding, the padded
// decoder's, without, the unpadded one's), or nil, "base64: ..."; encoding
// any bytes decodes back to them.
func FuzzBase64(f *testing.F) {
	for _, s := range []string{"", "aGk=", "aGk", "a\nG k=", "====", "a", "_-_-", "+/+/", "\xff", "aGk=aGk="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		L, _ := newLua(t, nil)
		for _, c := range []struct {
			encode, decode string
			enc, padded    *base64.Encoding
		}{{"encode", "decode", base64.RawStdEncoding, base64.StdEncoding}, {"url_encode", "url_decode", base64.RawURLEncoding, base64.URLEncoding}} {
			got := call(t, L, "base64", c.decode, lua.LString(s))
			clean := strings.Map(func(r rune) rune {
				if strings.ContainsRune(" \t\r\n", r) {
					return -1
				}
				return r
			}, s)
			enc := c.enc
			if strings.HasSuffix(clean, "=") {
				enc = c.padded
			}
			want, err := enc.DecodeString(clean)
			switch {
			case err != nil && (len(got) != 2 || got[0] != lua.LNil || !strings.HasPrefix(got[1].String(), "base64: ")):
				t.Fatalf("%s(%q) = %v, want nil, base64: ...", c.decode, s, got)
			case err == nil && (len(got) != 1 || got[0] != lua.LString(want)):
				t.Fatalf("%s(%q) = %v, want %q", c.decode, s, got, want)
			}
			text := call(t, L, "base64", c.encode, lua.LString(s))[0]
			if back := call(t, L, "base64", c.decode, text); back[0] != lua.LString(s) {
				t.Fatalf("%s(%s(%q)) = %v", c.decode, c.encode, s, back)
			}
		}
	})
}

// FuzzCrypto: every digest and HMAC takes any bytes and any key, never
// raises, and agrees with Go's, in hex and raw.
func FuzzCrypto(f *testing.F) {
	f.Add("", "")
	f.Add("key", "The quick brown fox")
	f.Add(strings.Repeat("k", 200), "\x00\xff")
	f.Fuzz(func(t *testing.T, key, msg string) {
		L, _ := newLua(t, nil)
		raw := L.GetGlobal("crypto").(*lua.LTable).RawGetString("raw").(*lua.LTable)
		L.SetGlobal("crypto_raw", raw)
		for _, d := range digests {
			h := d.new()
			h.Write([]byte(msg))
			sum := h.Sum(nil)
			m := hmac.New(d.new, []byte(key))
			m.Write([]byte(msg))
			mac := m.Sum(nil)
			for _, c := range []struct {
				module, fn string
				args       []lua.LValue
				want       string
			}{
				{"crypto", d.name, []lua.LValue{lua.LString(msg)}, hex.EncodeToString(sum)},
				{"crypto", "hmac_" + d.name, []lua.LValue{lua.LString(key), lua.LString(msg)}, hex.EncodeToString(mac)},
				{"crypto_raw", d.name, []lua.LValue{lua.LString(msg)}, string(sum)},
				{"crypto_raw", "hmac_" + d.name, []lua.LValue{lua.LString(key), lua.LString(msg)}, string(mac)},
			} {
				if got := call(t, L, c.module, c.fn, c.args...); len(got) != 1 || got[0] != lua.LString(c.want) {
					t.Fatalf("%s.%s(%q, %q) = %v, want %x", c.module, c.fn, key, msg, got, c.want)
				}
			}
		}
	})
}

// FuzzTime: format and parse take any layout and any text. A layout past
// 256 bytes and a time that is NaN or past 1e15 seconds raise (arguments
// of the wrong kind); anything else is a text, a number, or nil,
// "time: ...". A time format wrote parses back, with the same layout, to
// a time within a second of it when the layout holds the date, the clock
// and the zone (RFC 3339).
func FuzzTime(f *testing.F) {
	for _, s := range [][2]string{{"2024-01-02T03:04:05Z", "RFC3339"}, {"2024-01-02", "DateOnly"}, {"x", "2006"},
		{"", ""}, {"2024-13-45T99:99:99+99:99", ""}, {"Mon Jan  2 15:04:05 2006", "ANSIC"}, {"12", "05.000000000"},
		{"1", "__2"}, {strings.Repeat("9", 300), "2006"}} {
		f.Add(s[0], s[1], 1.7e9)
	}
	f.Add("", "", math.NaN())
	f.Add("", "", -1e15)
	f.Add("", "", 1e16)
	f.Fuzz(func(t *testing.T, text, layout string, when float64) {
		L, _ := newLua(t, nil)
		badLayout := len(layout) > 256 && namedLayouts[layout] == ""
		parsed, err := pcallMod(L, "time", "parse", lua.LString(text), lua.LString(layout))
		switch {
		case badLayout && err == nil, !badLayout && err != nil:
			t.Fatalf("parse(%q, %q): %v, %v", text, layout, parsed, err)
		case err == nil && parsed[0].Type() != lua.LTNumber &&
			(len(parsed) != 2 || parsed[0] != lua.LNil || !strings.HasPrefix(parsed[1].String(), "time: ")):
			t.Fatalf("parse(%q, %q) = %v", text, layout, parsed)
		}
		badTime := math.IsNaN(when) || math.Abs(when) > 1e15
		// RFC 3339 has four digits for the year.
		badYear := false
		if !badTime {
			year := unixTime(when).Year()
			badYear = year < 0 || year > 9999
		}
		rfc3339 := func(layout string) bool {
			return slices.Contains([]string{"RFC3339", "RFC3339Nano", time.RFC3339, time.RFC3339Nano}, layout)
		}
		formatted, err := pcallMod(L, "time", "format", lua.LNumber(when), lua.LString(layout))
		switch {
		case (badLayout || badTime || badYear && rfc3339(layout)) != (err != nil):
			t.Fatalf("format(%v, %q): %v, %v", when, layout, formatted, err)
		case err == nil && formatted[0].Type() != lua.LTString:
			t.Fatalf("format(%v, %q) = %v", when, layout, formatted)
		}
		if badTime || badYear {
			return
		}
		text = call(t, L, "time", "format", lua.LNumber(when))[0].String()
		back := call(t, L, "time", "parse", lua.LString(text))
		if n, ok := back[0].(lua.LNumber); when > -62135596800 && when < 253402300800 && (!ok || math.Abs(float64(n)-when) >= 1) {
			t.Fatalf("parse(format(%v)) = parse(%q) = %v", when, text, back)
		}
	})
}

// FuzzJSONIndent: what json.decode reads, json.encode writes again, with
// or without indent, as the same JSON value (-0 written as 0, as
// JavaScript's JSON.stringify does); no option raises but an unknown one.
func FuzzJSONIndent(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}],"c":"\u00e9"}`, `[]`, `{}`, `[[[[[]]]]]`, `"x"`, `1e400`, `{"a":1,"a":2}`, `[1,`} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, text string, indent bool) {
		L, _ := newLua(t, nil)
		v := call(t, L, "json", "decode", lua.LString(text))
		if v[0] == lua.LNil {
			return
		}
		opts := L.NewTable()
		opts.RawSetString("indent", lua.LBool(indent))
		out := call(t, L, "json", "encode", v[0], opts)
		if out[0] == lua.LNil {
			t.Fatalf("encode(decode(%q), {indent = %v}) = %v", text, indent, out)
		}
		var a, b any
		if err := json.Unmarshal([]byte(text), &a); err != nil {
			t.Fatalf("json.decode read %q, which Go does not: %v", text, err)
		}
		if err := json.Unmarshal([]byte(out[0].String()), &b); err != nil {
			t.Fatalf("encode(decode(%q)) = %q, not JSON: %v", text, out[0], err)
		}
		ja, _ := json.Marshal(positiveZero(a))
		jb, _ := json.Marshal(positiveZero(b))
		if string(ja) != string(jb) {
			t.Fatalf("encode(decode(%q), {indent = %v}) = %s", text, indent, out[0])
		}
		opts.RawSetString("indnet", lua.LTrue)
		if _, err := pcallMod(L, "json", "encode", v[0], opts); err == nil {
			t.Fatalf("encode with an unknown option did not raise")
		}
	})
}

// positiveZero returns v, a decoded JSON value, with every -0 made 0.
func positiveZero(v any) any {
	switch v := v.(type) {
	case float64:
		if v == 0 {
			return 0.0
		}
	case []any:
		for i := range v {
			v[i] = positiveZero(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = positiveZero(v[k])
		}
	}
	return v
}
