package bridge

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// Interning of object keys: the same few keys ("type", "text", "name") come
// back in every request, and a cached boxed string saves two allocations per
// key. The cache is small and starts over when full, so hostile input cannot
// grow it.
const (
	maxInternLen     = 32
	maxInternEntries = 256
)

// smallInts holds boxed small integers, so that decoding the most common
// numbers does not allocate. It is never written after initialisation.
var smallInts = func() (a [1024]lua.LValue) {
	for i := range a {
		a[i] = lua.LNumber(i)
	}
	return a
}()

// boxInt returns n as a Lua value, without allocating for small n.
func boxInt(n int) lua.LValue {
	if n >= 0 && n < len(smallInts) {
		return smallInts[n]
	}
	return lua.LNumber(n)
}

// maxSharedInput is the largest input whose plain string values are cut from
// one copy of the whole text, which saves an allocation per string. A string
// kept from such an input keeps the whole (small) text alive.
const maxSharedInput = 1024

// A DecodeError reports invalid JSON text.
type DecodeError struct {
	Offset int // byte offset of the problem in the input
	Msg    string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// Decode converts one JSON text into a Lua value of this state. Objects become
// tables marked as objects, arrays tables marked as arrays (1-based), null
// this state's mcp.null. Input must be valid UTF-8 and hold exactly one value
// (surrounding whitespace allowed), nested at most MaxDepth deep. Numbers
// beyond ±1.8e308 are an error; integers beyond 2^53 become the nearest
// float64. A \u escape of an unpaired surrogate decodes as U+FFFD.
//
// A decode may build what the state's memory budget has left, no more
// (errors wrap lua.ErrMemoryLimit), and stops when the state's context is
// done (errors wrap the context's). What it built is charged to the budget.
func (c *Codec) Decode(data []byte) (lua.LValue, error) {
	d := decoder{c: c, data: data, room: newBudget(c.l)}
	if len(data) <= maxSharedInput {
		d.text = string(data)
	}
	d.skipSpace()
	v, err := d.value(0)
	if err == nil {
		d.skipSpace()
		if d.pos < len(d.data) {
			err = d.errorf("unexpected %s after the value", d.describe())
		}
	}
	// The value is charged whole, although its tables were counted as they
	// were made: checking only what it fits in (room) left the budget's
	// count where it was, so no measure ever ran and a script could keep
	// decoded values past its limit, one decode at a time. Should the
	// charge measure the state, the value is not reachable from it yet,
	// and must be charged in full to be seen.
	if err == nil && c.l.ReserveMemory(d.size) != nil {
		err = fmt.Errorf("%w (the decoded value, %d bytes, outgrows the state's memory budget)", lua.ErrMemoryLimit, d.size)
	}
	if cap(c.text) > maxKeptBuffer {
		c.text = nil
	}
	if err != nil {
		clear(c.stack)
		c.stack = c.stack[:0]
		return nil, err
	}
	if cap(c.stack) > maxKeptBuffer/16 {
		c.stack = nil
	}
	return v, nil
}

type decoder struct {
	c     *Codec
	data  []byte
	text  string // a copy of data when it is small, to cut strings from
	pos   int
	room  budget // what the values may take
	size  int    // bytes of values built so far
	count int    // charges so far, for context checks
}

// charge counts n bytes of values about to be built; it fails when they do
// not fit in the state's memory budget or when the state's context is done.
func (d *decoder) charge(n int) error {
	d.size += n
	if !d.room.fits(d.size) {
		return fmt.Errorf("%w at byte %d (the decoded value outgrows the state's memory budget)", lua.ErrMemoryLimit, d.pos)
	}
	if d.count++; d.count%checkEvery == 0 {
		return contextErr(d.c.l)
	}
	return nil
}

func (d *decoder) errorf(format string, args ...any) error {
	return &DecodeError{Offset: d.pos, Msg: fmt.Sprintf(format, args...)}
}

// describe names the byte at pos for an error message.
func (d *decoder) describe() string {
	if d.pos >= len(d.data) {
		return "end of input"
	}
	b := d.data[d.pos]
	if b >= 0x20 && b < 0x7f {
		return strconv.QuoteRune(rune(b))
	}
	return fmt.Sprintf("byte 0x%02x", b)
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// value reads one value at pos; depth counts the containers around it.
func (d *decoder) value(depth int) (lua.LValue, error) {
	if d.pos >= len(d.data) {
		return nil, d.errorf("unexpected end of input, expecting a value")
	}
	switch b := d.data[d.pos]; b {
	case '{':
		return d.object(depth + 1)
	case '[':
		return d.array(depth + 1)
	case '"':
		return d.str()
	case 't':
		return lua.LTrue, d.literal("true")
	case 'f':
		return lua.LFalse, d.literal("false")
	case 'n':
		return d.c.null, d.literal("null")
	default:
		if b == '-' || '0' <= b && b <= '9' {
			return d.number()
		}
		return nil, d.errorf("unexpected %s, expecting a value", d.describe())
	}
}

func (d *decoder) literal(word string) error {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return d.errorf("invalid literal, expecting %s", word)
	}
	d.pos += len(word)
	return nil
}

func (d *decoder) array(depth int) (lua.LValue, error) {
	if depth > MaxDepth {
		return nil, d.errorf("nesting deeper than %d levels", MaxDepth)
	}
	d.pos++ // [
	d.skipSpace()
	c := d.c
	// An empty array is a table too: "[[],[],...]" charged only its
	// slots held several times the budget.
	if err := d.charge(sizeTable); err != nil {
		return nil, err
	}
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return c.MarkArray(c.l.CreateTable(0, 0)), nil
	}
	base := len(c.stack)
	for {
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		if err := d.charge(sizeSlot); err != nil {
			return nil, err
		}
		c.stack = append(c.stack, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errorf("unexpected end of input in an array")
		}
		if d.data[d.pos] == ']' {
			d.pos++
			break
		}
		if d.data[d.pos] != ',' {
			return nil, d.errorf("unexpected %s in an array, expecting ',' or ']'", d.describe())
		}
		d.pos++
		d.skipSpace()
	}
	items := c.stack[base:]
	t := c.l.CreateTable(len(items), 0)
	for i, v := range items {
		t.RawSetInt(i+1, v)
	}
	clear(items)
	c.stack = c.stack[:base]
	return c.MarkArray(t), nil
}

func (d *decoder) object(depth int) (lua.LValue, error) {
	if depth > MaxDepth {
		return nil, d.errorf("nesting deeper than %d levels", MaxDepth)
	}
	d.pos++ // {
	d.skipSpace()
	c := d.c
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		// An empty object is a table too, without its maps.
		if err := d.charge(sizeTable); err != nil {
			return nil, err
		}
		return c.MarkObject(c.l.CreateTable(0, 0)), nil
	}
	base := len(c.stack)
	if err := d.charge(sizeTable + sizeHashPart); err != nil {
		return nil, err
	}
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.errorf("unexpected %s in an object, expecting a string key", d.describe())
		}
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.errorf("unexpected %s after an object key, expecting ':'", d.describe())
		}
		d.pos++
		d.skipSpace()
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		if err := d.charge(sizeKey); err != nil {
			return nil, err
		}
		c.stack = append(c.stack, k, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errorf("unexpected end of input in an object")
		}
		if d.data[d.pos] == '}' {
			d.pos++
			break
		}
		if d.data[d.pos] != ',' {
			return nil, d.errorf("unexpected %s in an object, expecting ',' or '}'", d.describe())
		}
		d.pos++
		d.skipSpace()
	}
	kvs := c.stack[base:]
	t := c.l.CreateTable(0, len(kvs)/2)
	for i := 0; i < len(kvs); i += 2 {
		// A repeated key keeps its last value, as in most JSON decoders.
		t.RawSetString(string(kvs[i].(lua.LString)), kvs[i+1])
	}
	clear(kvs)
	c.stack = c.stack[:base]
	return c.MarkObject(t), nil
}

// key reads an object key, interning short ones.
func (d *decoder) key() (lua.LValue, error) {
	raw, _, err := d.strBytes()
	if err != nil {
		return nil, err
	}
	if len(raw) > maxInternLen {
		if err := d.charge(sizeString + len(raw)); err != nil {
			return nil, err
		}
		return lua.LString(raw), nil
	}
	c := d.c
	if v, ok := c.intern[string(raw)]; ok {
		return v, nil
	}
	switch {
	case c.intern == nil:
		// Small at first: every idle session's state keeps its map.
		c.intern = make(map[string]lua.LValue)
	case len(c.intern) >= maxInternEntries:
		clear(c.intern)
	}
	s := string(raw)
	v := lua.LValue(lua.LString(s))
	c.intern[s] = v
	return v, nil
}

func (d *decoder) str() (lua.LValue, error) {
	raw, off, err := d.strBytes()
	if err != nil {
		return nil, err
	}
	if err := d.charge(sizeString + len(raw)); err != nil {
		return nil, err
	}
	if off >= 0 && d.text != "" {
		return lua.LString(d.text[off : off+len(raw)]), nil
	}
	return lua.LString(raw), nil
}

// strBytes reads a string at pos and returns its content. The result aliases
// the input (at offset off) or, when off is -1, the codec's scratch buffer:
// copy it before the next call.
func (d *decoder) strBytes() (raw []byte, off int, err error) {
	start := d.pos
	d.pos++ // "
	data := d.data
	ascii := true
	i := d.pos
	for ; i < len(data); i++ {
		b := data[i]
		if b == '"' || b == '\\' || b < 0x20 {
			break
		}
		if b >= utf8.RuneSelf {
			ascii = false
		}
	}
	if i < len(data) && data[i] == '"' {
		raw, off := data[d.pos:i], d.pos
		if !ascii && !utf8.Valid(raw) {
			return nil, 0, d.badUTF8(start+1, i)
		}
		d.pos = i + 1
		return raw, off, nil
	}
	// Escapes (or an error): unescape into the scratch buffer.
	out := append(d.c.text[:0], data[d.pos:i]...)
	d.pos = i
	for {
		if d.pos >= len(data) {
			return nil, 0, d.errorf("unexpected end of input in a string")
		}
		b := data[d.pos]
		switch {
		case b == '"':
			d.pos++
			d.c.text = out
			if !ascii && !utf8.Valid(out) {
				return nil, 0, d.badUTF8(start+1, d.pos-1)
			}
			return out, -1, nil
		case b == '\\':
			if out, err = d.escape(out); err != nil {
				return nil, 0, err
			}
		case b < 0x20:
			return nil, 0, d.errorf("control character 0x%02x in a string (escape it)", b)
		default:
			j := d.pos
			for ; j < len(data) && data[j] != '"' && data[j] != '\\' && data[j] >= 0x20; j++ {
				if data[j] >= utf8.RuneSelf {
					ascii = false
				}
			}
			out = append(out, data[d.pos:j]...)
			d.pos = j
		}
	}
}

// badUTF8 reports the first byte of data[from:to], the content of a string,
// that is not valid UTF-8, at its offset. The escapes in it are ASCII and
// decode to whole characters, so the bytes that make the decoded string
// invalid are the same in the input.
func (d *decoder) badUTF8(from, to int) error {
	d.pos = from
	for d.pos < to {
		r, n := utf8.DecodeRune(d.data[d.pos:to])
		if r == utf8.RuneError && n == 1 {
			return d.errorf("invalid UTF-8 in a string (byte 0x%02x)", d.data[d.pos])
		}
		d.pos += n
	}
	d.pos = from - 1
	return d.errorf("invalid UTF-8 in a string")
}

// escape decodes the escape sequence at pos (a backslash) onto out.
func (d *decoder) escape(out []byte) ([]byte, error) {
	data := d.data
	if d.pos+1 >= len(data) {
		return out, d.errorf("unexpected end of input in a string")
	}
	d.pos++
	b := data[d.pos]
	d.pos++
	switch b {
	case '"', '\\', '/':
		return append(out, b), nil
	case 'b':
		return append(out, '\b'), nil
	case 'f':
		return append(out, '\f'), nil
	case 'n':
		return append(out, '\n'), nil
	case 'r':
		return append(out, '\r'), nil
	case 't':
		return append(out, '\t'), nil
	case 'u':
		r, err := d.hex4()
		if err != nil {
			return out, err
		}
		if 0xD800 <= r && r < 0xDC00 && d.pos+6 <= len(data) && data[d.pos] == '\\' && data[d.pos+1] == 'u' {
			save := d.pos
			d.pos += 2
			lo, err := d.hex4()
			if err != nil {
				return out, err
			}
			if 0xDC00 <= lo && lo < 0xE000 {
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
			} else {
				d.pos = save // not a pair: that escape stands on its own
			}
		}
		if 0xD800 <= r && r < 0xE000 {
			r = utf8.RuneError // an unpaired surrogate has no UTF-8 form
		}
		return utf8.AppendRune(out, r), nil
	}
	d.pos -= 2
	return out, d.errorf("invalid escape sequence in a string")
}

func (d *decoder) hex4() (rune, error) {
	var r rune
	for i := range 4 {
		if d.pos+i >= len(d.data) {
			d.pos += i
			return 0, d.errorf("unexpected end of input in a \\u escape")
		}
		b := d.data[d.pos+i]
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b -= 'a' - 10
		case 'A' <= b && b <= 'F':
			b -= 'A' - 10
		default:
			d.pos += i
			return 0, d.errorf("invalid \\u escape in a string")
		}
		r = r<<4 | rune(b)
	}
	d.pos += 4
	return r, nil
}

// number reads a JSON number. Plain integers of up to 18 digits are read
// directly (exactly, then rounded once to float64); the rest go through
// strconv.ParseFloat, which rounds correctly.
func (d *decoder) number() (lua.LValue, error) {
	data := d.data
	start := d.pos
	i := d.pos
	neg := data[i] == '-'
	if neg {
		i++
	}
	if i >= len(data) || data[i] < '0' || data[i] > '9' {
		d.pos = i
		return nil, d.errorf("invalid number, expecting a digit")
	}
	var mant uint64
	digits := 0
	if data[i] == '0' {
		i++
		digits = 1
	} else {
		for ; i < len(data) && '0' <= data[i] && data[i] <= '9'; i++ {
			mant = mant*10 + uint64(data[i]-'0')
			digits++
		}
	}
	simple := digits <= 18
	if i < len(data) && data[i] == '.' {
		simple = false
		i++
		n := i
		for ; i < len(data) && '0' <= data[i] && data[i] <= '9'; i++ {
		}
		if i == n {
			d.pos = i
			return nil, d.errorf("invalid number, expecting a digit after '.'")
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		simple = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		n := i
		for ; i < len(data) && '0' <= data[i] && data[i] <= '9'; i++ {
		}
		if i == n {
			d.pos = i
			return nil, d.errorf("invalid number, expecting a digit in the exponent")
		}
	}
	d.pos = i
	if simple {
		if !neg && mant < uint64(len(smallInts)) {
			return smallInts[mant], nil
		}
		f := float64(mant)
		if neg {
			f = -f
		}
		return lua.LNumber(f), nil
	}
	f, err := strconv.ParseFloat(string(data[start:i]), 64)
	if err != nil || math.IsInf(f, 0) {
		d.pos = start
		return nil, d.errorf("number is out of range")
	}
	return lua.LNumber(f), nil
}
