package bridge

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

var fuzzSeeds = []string{
	`null`, `true`, `false`, `0`, `-0`, `-1`, `1.5`, `1e20`, `1e21`, `1e-7`, `9007199254740993`,
	`123456789012345678901234567890`, `1e400`, `-1e-400`, `""`, `"\u0000"`, `"\ud83d\ude00"`, `"\ud800"`,
	`"\u2028"`, "\"\xff\"", `[]`, `{}`, `[[],{}]`, `[null,null]`, `{"a":null}`, `{"b":1,"a":[1,2,{"c":"d"}]}`,
	`{"a":1,"a":2}`, `{"content":[{"type":"text","text":"hi"}],"isError":false}`,
	strings.Repeat("[", 200) + strings.Repeat("]", 200), strings.Repeat("[", 201) + strings.Repeat("]", 201),
	`[1,]`, `{"a"}`, `01`, `1 2`, ` [ 1 , { "k" : "v" } ] `,
}

// jsonOf is what encoding/json reads data as (nil when it does not).
func jsonOf(data []byte) any {
	var v any
	_ = json.Unmarshal(data, &v)
	return v
}

// FuzzDecode: Decode never panics; what it accepts is valid JSON, encodes,
// re-decodes to the same encoding, means what encoding/json thinks it means,
// and survives Clone and CopyTo unchanged.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	// One pair of states serves every input (a state takes far longer to make
	// than a decode): the codecs must come out of each call clean anyway.
	c, c2 := fuzzCodecs(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := c.Decode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Offset < 0 || de.Offset > len(data) {
				t.Fatalf("bad error %#v", err)
			}
			if json.Valid(data) && utf8.Valid(data) &&
				!strings.Contains(err.Error(), "nesting deeper") && !strings.Contains(err.Error(), "out of range") {
				t.Fatalf("valid JSON %q rejected: %v", data, err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("invalid JSON %q accepted", data)
		}
		enc, err := c.Encode(v, "v")
		if err != nil {
			t.Fatalf("decoded %q does not encode: %v", data, err)
		}
		// Decoded tables are marked, and marks win over a schema's roles;
		// the roles end with the schema (the re-encoding below is plain).
		if _, isObject := jsonOf(data).(map[string]any); isObject {
			if sch, err := c.EncodeAs(v, "v", Schema); err != nil || string(sch) != string(enc) {
				t.Fatalf("as a schema %s encodes as %s (%v)", enc, sch, err)
			}
		}
		v2, err := c.Decode(enc)
		if err != nil {
			t.Fatalf("encoding %s does not decode: %v", enc, err)
		}
		if enc2, err := c.Encode(v2, "v"); err != nil || string(enc2) != string(enc) {
			t.Fatalf("re-encoding differs: %s vs %s (%v)", enc, enc2, err)
		}
		var want, got any
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		if err := json.Unmarshal(enc, &got); err != nil {
			t.Fatalf("encoding/json on our output %s: %v", enc, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("meaning changed:\n in  %q\n out %s", data, enc)
		}
		cl, _ := c.Clone(v)
		if enc3, err := c.Encode(cl, "v"); err != nil || string(enc3) != string(enc) {
			t.Fatalf("clone encodes as %s (%v), want %s", enc3, err, enc)
		}
		cp, err := c.CopyTo(c2, v)
		if err != nil {
			t.Fatal(err)
		}
		if enc4, err := c2.Encode(cp, "v"); err != nil || string(enc4) != string(enc) {
			t.Fatalf("copy encodes as %s (%v), want %s", enc4, err, enc)
		}
	})
}

// FuzzRoundTrip builds arbitrary Lua values (NaN, bad UTF-8, mixed keys and
// deep nesting included) from the fuzz input. What encodes must decode to an
// equal value; what does not must fail with a path, the same one for a Clone
// and a CopyTo of the value.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{5, 3, 2, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 4, 3, 'a', 'b', 'c', 0})
	f.Add([]byte{6, 2, 4, 1, 'k', 3, 7, 4, 1, 'j', 5, 0})
	f.Add([]byte{7, 3, 0, 1, 2, 3, 4})
	f.Add([]byte{8, 250, 1})
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f})
	f.Add([]byte{4, 2, 0xff, 0xfe})
	f.Add([]byte{7, 2, 1, 4, 1, 'x', 1})
	c, c2 := fuzzCodecs(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{data: data, c: c}
		v := g.value(0)
		enc, err := c.Encode(v, "v")
		cl, _ := c.Clone(v)
		cp, cperr := c.CopyTo(c2, v)
		if cperr != nil {
			t.Fatalf("CopyTo: %v", cperr)
		}
		encClone, errClone := c.Encode(cl, "v")
		encCopy, errCopy := c2.Encode(cp, "v")
		if err != nil {
			var ee *EncodeError
			if !errors.As(err, &ee) || !strings.HasPrefix(ee.Path, "v") {
				t.Fatalf("bad error %#v", err)
			}
			if errClone == nil || errClone.Error() != err.Error() {
				t.Fatalf("clone: %v, original: %v", errClone, err)
			}
			if errCopy == nil || errCopy.Error() != err.Error() {
				t.Fatalf("copy: %v, original: %v", errCopy, err)
			}
			return
		}
		if string(encClone) != string(enc) || string(encCopy) != string(enc) {
			t.Fatalf("original %s, clone %s (%v), copy %s (%v)", enc, encClone, errClone, encCopy, errCopy)
		}
		if !json.Valid(enc) || !utf8.Valid(enc) {
			t.Fatalf("invalid output %q", enc)
		}
		dec, err := c.Decode(enc)
		if err != nil {
			t.Fatalf("Decode(%s): %v", enc, err)
		}
		if msg := sameValue(c, v, dec); msg != "" {
			t.Fatalf("%s: %s", enc, msg)
		}
		if enc2, err := c.Encode(dec, "v"); err != nil || string(enc2) != string(enc) {
			t.Fatalf("re-encoding differs: %s vs %s (%v)", enc, enc2, err)
		}
	})
}

func fuzzCodecs(f *testing.F) (c, c2 *Codec) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	L2 := lua.NewState(lua.Options{SkipOpenLibs: true})
	f.Cleanup(L.Close)
	f.Cleanup(L2.Close)
	return NewCodec(L), NewCodec(L2)
}

// gen builds a Lua value from bytes.
type gen struct {
	data []byte
	pos  int
	c    *Codec
}

func (g *gen) byte() byte {
	if g.pos >= len(g.data) {
		return 0
	}
	b := g.data[g.pos]
	g.pos++
	return b
}

func (g *gen) bytes(n int) []byte {
	end := min(g.pos+n, len(g.data))
	b := g.data[g.pos:end]
	g.pos = end
	return b
}

func (g *gen) str() string { return string(g.bytes(int(g.byte() % 16))) }

func (g *gen) value(depth int) lua.LValue {
	L := g.c.l
	if depth > 300 {
		return lua.LNil
	}
	switch g.byte() % 10 {
	case 0:
		return g.c.Null()
	case 1:
		return lua.LBool(g.byte()%2 == 0)
	case 2:
		var b [8]byte
		copy(b[:], g.bytes(8))
		return lua.LNumber(math.Float64frombits(binary.LittleEndian.Uint64(b[:])))
	case 3:
		return lua.LNumber(int8(g.byte()))
	case 4:
		return lua.LString(g.str())
	case 5:
		t := g.c.MarkArray(L.NewTable())
		for i := range int(g.byte() % 5) {
			t.RawSetInt(i+1, g.value(depth+1))
		}
		return t
	case 6:
		t := g.c.MarkObject(L.NewTable())
		for range int(g.byte() % 5) {
			var k lua.LValue = lua.LString(g.str())
			if g.byte()%3 == 0 {
				k = lua.LNumber(int8(g.byte()))
			}
			if v := g.value(depth + 1); v != lua.LNil {
				t.RawSet(k, v)
			}
		}
		return t
	case 7:
		t := L.NewTable()
		n := int(g.byte() % 5)
		for i := range n {
			var k lua.LValue = lua.LNumber(i + 1)
			if g.byte()%4 == 0 {
				k = lua.LString(g.str())
			}
			if v := g.value(depth + 1); v != lua.LNil {
				t.RawSet(k, v)
			}
		}
		return t
	case 8:
		n := int(g.byte())
		inner := g.value(depth + n)
		for range n {
			t := L.NewTable()
			if inner != lua.LNil {
				t.RawSetInt(1, inner)
			}
			inner = t
		}
		return inner
	default:
		return lua.LString(strings.ToValidUTF8(g.str(), "?"))
	}
}

// sameValue reports how dec (decoded) differs from v (the original), or "".
func sameValue(c *Codec, v, dec lua.LValue) string {
	switch v := v.(type) {
	case *lua.LTable:
		d, ok := dec.(*lua.LTable)
		if !ok {
			return "table became " + dec.Type().String()
		}
		n := v.MaxN()
		if m := c.mark(v); m == markArray || m == markNone && n > 0 {
			if !IsArray(d) || d.MaxN() != n {
				return "array shape changed"
			}
			for i := 1; i <= n; i++ {
				if msg := sameValue(c, v.RawGetInt(i), d.RawGetInt(i)); msg != "" {
					return "[" + strconv.Itoa(i) + "]" + msg
				}
			}
			return ""
		}
		if !IsObject(d) {
			return "object not marked"
		}
		count := 0
		var msg string
		v.ForEach(func(k, ev lua.LValue) {
			count++
			key := k.String()
			if msg == "" {
				if m := sameValue(c, ev, d.RawGetString(key)); m != "" {
					msg = "." + key + m
				}
			}
		})
		dcount := 0
		d.ForEach(func(lua.LValue, lua.LValue) { dcount++ })
		if msg == "" && count != dcount {
			msg = "key count changed"
		}
		return msg
	case *lua.LNilType:
		if !c.IsNull(dec) {
			return "nil became " + dec.String()
		}
	default:
		if v != dec {
			if a, ok := v.(lua.LNumber); ok {
				if b, ok := dec.(lua.LNumber); ok && a == b {
					return ""
				}
			}
			return v.String() + " became " + dec.String()
		}
	}
	return ""
}

// FuzzThaw: Thaw never panics on bytes from anywhere (a saved session is
// read from a file), CheckFrozen agrees with it on every input without a
// Lua state, and what thaws freezes again.
func FuzzThaw(f *testing.F) {
	c, c2 := fuzzCodecs(f)
	// Seeds: real frozen forms of values with arrays, objects, shared
	// tables, a cycle, strings written once, null and a metatable.
	for _, s := range fuzzSeeds {
		if v, err := c.Decode([]byte(s)); err == nil {
			if b, err := c.Freeze(v); err == nil {
				f.Add(b)
			}
		}
	}
	L := c.l
	shared := L.NewTable()
	shared.RawSetString("k", lua.LString("v"))
	top := L.NewTable()
	top.RawSetString("a", shared)
	top.RawSetString("b", shared)
	top.RawSetString("self", top)
	top.RawSetString("none", c.null)
	top.RawSetInt(1, lua.LNumber(1.5))
	top.Metatable = shared
	if b, err := c.Freeze(top); err == nil {
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{freezeVersion, 1, kindMeta, 0, 0, 0, tagTable, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := c2.Thaw(b)
		if cerr := CheckFrozen(b); (cerr == nil) != (err == nil) {
			t.Fatalf("Thaw: %v, CheckFrozen: %v", err, cerr)
		}
		if err != nil {
			return
		}
		if _, err := c2.Freeze(v); err != nil {
			t.Fatalf("a thawed value does not freeze again: %v", err)
		}
	})
}
