package lua

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

func intMin(a, b int) int {
	if a < b {
		return a
	} else {
		return b
	}
}

func intMax(a, b int) int {
	if a > b {
		return a
	} else {
		return b
	}
}

func defaultFormat(v interface{}, f fmt.State, c rune) {
	buf := make([]string, 0, 10)
	buf = append(buf, "%")
	for i := 0; i < 128; i++ {
		if f.Flag(i) {
			buf = append(buf, string(rune(i)))
		}
	}

	if w, ok := f.Width(); ok {
		buf = append(buf, strconv.Itoa(w))
	}
	if p, ok := f.Precision(); ok {
		buf = append(buf, "."+strconv.Itoa(p))
	}
	buf = append(buf, string(c))
	format := strings.Join(buf, "")
	fmt.Fprintf(f, format, v)
}

type flagScanner struct {
	flag       byte
	start      string
	end        string
	buf        []byte
	str        string
	Length     int
	Pos        int
	HasFlag    bool
	ChangeFlag bool
}

func newFlagScanner(flag byte, start, end, str string) *flagScanner {
	return &flagScanner{flag, start, end, make([]byte, 0, len(str)), str, len(str), 0, false, false}
}

func (fs *flagScanner) AppendString(str string) { fs.buf = append(fs.buf, str...) }

func (fs *flagScanner) AppendChar(ch byte) { fs.buf = append(fs.buf, ch) }

func (fs *flagScanner) String() string { return string(fs.buf) }

func (fs *flagScanner) Next() (byte, bool) {
	c := byte('\000')
	fs.ChangeFlag = false
	if fs.Pos == fs.Length {
		if fs.HasFlag {
			fs.AppendString(fs.end)
		}
		return c, true
	} else {
		c = fs.str[fs.Pos]
		if c == fs.flag {
			if fs.Pos < (fs.Length-1) && fs.str[fs.Pos+1] == fs.flag {
				fs.HasFlag = false
				fs.AppendChar(fs.flag)
				fs.Pos += 2
				return fs.Next()
			} else if fs.Pos != fs.Length-1 {
				if fs.HasFlag {
					fs.AppendString(fs.end)
				}
				fs.AppendString(fs.start)
				fs.ChangeFlag = true
				fs.HasFlag = true
			}
		}
	}
	fs.Pos++
	return c, false
}

// strftime formats t as C's strftime does in the C locale, with glibc's
// conversions (patched for luamcp): os.date passes each "%x" of its format to
// strftime, as Lua 5.1's os_date does. Upstream mapped a few conversions to
// Go layouts, some wrongly ("%a" was "mon", "%x" the time, "%c" neither C's
// nor glibc's form) and left %j, %U, %W and most of glibc's as text. utc
// tells whether t comes from gmtime ("!"), whose zone glibc names "GMT".
// A conversion glibc does not know is written as it stands, as glibc does.
func strftime(t time.Time, cfmt string, utc bool) string {
	b := make([]byte, 0, len(cfmt))
	for i := 0; i < len(cfmt); i++ {
		c := cfmt[i]
		if c != '%' || i+1 == len(cfmt) {
			b = append(b, c)
			continue
		}
		i++
		b = appendStrftime(b, t, cfmt[i], utc)
	}
	return string(b)
}

var (
	cWeekdays = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	cMonths   = [...]string{"January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
)

// appendStrftime appends the conversion %c of t to b.
func appendStrftime(b []byte, t time.Time, c byte, utc bool) []byte {
	num := func(v, width int, pad byte) []byte {
		s := strconv.Itoa(v)
		for n := len(s); n < width; n++ {
			b = append(b, pad)
		}
		return append(b, s...)
	}
	hour12 := t.Hour() % 12
	if hour12 == 0 {
		hour12 = 12
	}
	yday := t.YearDay() - 1
	wday := int(t.Weekday())
	switch c {
	case 'a':
		return append(b, cWeekdays[wday][:3]...)
	case 'A':
		return append(b, cWeekdays[wday]...)
	case 'b', 'h':
		return append(b, cMonths[t.Month()-1][:3]...)
	case 'B':
		return append(b, cMonths[t.Month()-1]...)
	case 'c':
		return appendStrftimes(b, t, "a b e H:M:S Y", utc)
	case 'C':
		return num(floorDiv(t.Year(), 100), 2, '0')
	case 'd':
		return num(t.Day(), 2, '0')
	case 'D', 'x':
		return appendStrftimes(b, t, "m/d/y", utc)
	case 'e':
		return num(t.Day(), 2, ' ')
	case 'F':
		b = num(t.Year(), 1, '0')
		return appendStrftimes(b, t, "-m-d", utc)
	case 'g':
		y, _ := t.ISOWeek()
		return num(floorMod(y, 100), 2, '0')
	case 'G':
		y, _ := t.ISOWeek()
		return num(y, 1, '0')
	case 'H':
		return num(t.Hour(), 2, '0')
	case 'I':
		return num(hour12, 2, '0')
	case 'j':
		return num(yday+1, 3, '0')
	case 'k':
		return num(t.Hour(), 2, ' ')
	case 'l':
		return num(hour12, 2, ' ')
	case 'm':
		return num(int(t.Month()), 2, '0')
	case 'M':
		return num(t.Minute(), 2, '0')
	case 'n':
		return append(b, '\n')
	case 'p', 'P':
		s := "AM"
		if t.Hour() >= 12 {
			s = "PM"
		}
		if c == 'P' {
			s = strings.ToLower(s)
		}
		return append(b, s...)
	case 'r':
		return appendStrftimes(b, t, "I:M:S p", utc)
	case 'R':
		return appendStrftimes(b, t, "H:M", utc)
	case 's':
		return strconv.AppendInt(b, t.Unix(), 10)
	case 'S':
		return num(t.Second(), 2, '0')
	case 't':
		return append(b, '\t')
	case 'T', 'X':
		return appendStrftimes(b, t, "H:M:S", utc)
	case 'u':
		return num((wday+6)%7+1, 1, '0')
	case 'U':
		return num((yday+7-wday)/7, 2, '0')
	case 'V':
		_, w := t.ISOWeek()
		return num(w, 2, '0')
	case 'w':
		return num(wday, 1, '0')
	case 'W':
		return num((yday+7-(wday+6)%7)/7, 2, '0')
	case 'y':
		return num(floorMod(t.Year(), 100), 2, '0')
	case 'Y':
		return num(t.Year(), 1, '0')
	case 'z':
		_, off := t.Zone()
		sign := byte('+')
		if off < 0 {
			sign, off = '-', -off
		}
		b = append(b, sign)
		return num(off/3600*100+off%3600/60, 4, '0')
	case 'Z':
		if utc {
			return append(b, "GMT"...)
		}
		name, _ := t.Zone()
		return append(b, name...)
	case '%':
		return append(b, '%')
	}
	return append(b, '%', c)
}

// appendStrftimes appends the conversions of layout, each letter one and any
// other byte itself.
func appendStrftimes(b []byte, t time.Time, layout string, utc bool) []byte {
	for i := 0; i < len(layout); i++ {
		if c := layout[i]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			b = appendStrftime(b, t, c, utc)
		} else {
			b = append(b, c)
		}
	}
	return b
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int) int { return a - floorDiv(a, b)*b }

func isInteger(v LNumber) bool {
	return float64(v) == float64(int64(v))
	//_, frac := math.Modf(float64(v))
	//return frac == 0.0
}

func isArrayKey(v LNumber) bool {
	return isInteger(v) && v < LNumber(int((^uint(0))>>1)) && v > LNumber(0) && v < LNumber(MaxArrayIndex)
}

// parseNumber converts a string as Lua does (patched for luamcp: see
// str2number in number.go; upstream read Go's number syntax).
func parseNumber(number string) (LNumber, error) {
	if v, ok := str2number(number); ok {
		return v, nil
	}
	return 0, errNotANumber
}

// errNotANumber is parseNumber's error (patched for luamcp).
var errNotANumber = errors.New("not a number")

func popenArgs(arg string) (string, []string) {
	cmd := "/bin/sh"
	args := []string{"-c"}
	if LuaOS == "windows" {
		cmd = "C:\\Windows\\system32\\cmd.exe"
		args = []string{"/c"}
	}
	args = append(args, arg)
	return cmd, args
}

func isGoroutineSafe(lv LValue) bool {
	switch v := lv.(type) {
	case *LFunction, *LUserData, *LState:
		return false
	case *LTable:
		return v.Metatable == LNil
	default:
		return true
	}
}

func readBufioSize(reader *bufio.Reader, size int64) ([]byte, error, bool) {
	result := []byte{}
	read := int64(0)
	var err error
	var n int
	for read != size {
		buf := make([]byte, size-read)
		n, err = reader.Read(buf)
		if err != nil {
			break
		}
		read += int64(n)
		result = append(result, buf[:n]...)
	}
	e := err
	if e != nil && e == io.EOF {
		e = nil
	}

	return result, e, len(result) == 0 && err == io.EOF
}

func readBufioLine(reader *bufio.Reader) ([]byte, error, bool) {
	result := []byte{}
	var buf []byte
	var err error
	var isprefix bool = true
	for isprefix {
		buf, isprefix, err = reader.ReadLine()
		if err != nil {
			break
		}
		result = append(result, buf...)
	}
	e := err
	if e != nil && e == io.EOF {
		e = nil
	}

	return result, e, len(result) == 0 && err == io.EOF
}

func int2Fb(val int) int {
	e := 0
	x := val
	for x >= 16 {
		x = (x + 1) >> 1
		e++
	}
	if x < 8 {
		return x
	}
	return ((e + 1) << 3) | (x - 8)
}

func strCmp(s1, s2 string) int {
	len1 := len(s1)
	len2 := len(s2)
	for i := 0; ; i++ {
		c1 := -1
		if i < len1 {
			c1 = int(s1[i])
		}
		c2 := -1
		if i != len2 {
			c2 = int(s2[i])
		}
		switch {
		case c1 < c2:
			return -1
		case c1 > c2:
			return +1
		case c1 < 0:
			return 0
		}
	}
}

func unsafeFastStringToReadOnlyBytes(s string) (bs []byte) {
	sh := (*reflect.StringHeader)(unsafe.Pointer(&s))
	bh := (*reflect.SliceHeader)(unsafe.Pointer(&bs))
	bh.Data = sh.Data
	bh.Cap = sh.Len
	bh.Len = sh.Len
	return
}
