package jsontext

import (
	"encoding/json"
	"testing"
)

func TestAppendString(t *testing.T) {
	tests := []struct {
		in, want string
		valid    bool
	}{
		{"", `""`, true},
		{"plain", `"plain"`, true},
		{`q"b\`, `"q\"b\\"`, true},
		{"\n\r\t\b\f", `"\n\r\t\b\f"`, true},
		{"\x00\x1f", `"\u0000\u001f"`, true},
		{"<a&b>", `"<a&b>"`, true},
		{"é✓😀", `"é✓😀"`, true},
		{"\u2028x\u2029", `"\u2028x\u2029"`, true},
		{"a\xffb", `"a\ufffdb"`, false},
		{"\xe2\x82", `"\ufffd\ufffd"`, false},
	}
	for _, tt := range tests {
		got, valid := AppendString([]byte("x"), tt.in)
		if n := Len(tt.in); n != len(got)-1 {
			t.Errorf("Len(%q) = %d, AppendString wrote %d bytes", tt.in, n, len(got)-1)
		}
		if string(got) != "x"+tt.want || valid != tt.valid {
			t.Errorf("AppendString(%q) = %s, %v; want %s, %v", tt.in, got[1:], valid, tt.want, tt.valid)
		}
		var back string
		if err := json.Unmarshal(got[1:], &back); err != nil {
			t.Errorf("AppendString(%q) = %s: not JSON: %v", tt.in, got[1:], err)
		} else if tt.valid && back != tt.in {
			t.Errorf("AppendString(%q) reads back as %q", tt.in, back)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00", "\u2028", "\xff", "😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, valid := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q -> %s: not JSON: %v", s, out, err)
		}
		if valid && back != s {
			t.Fatalf("%q -> %s reads back as %q", s, out, back)
		}
	})
}
