package logcap

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want string // the kept prefix; "" means s unchanged
		cut  int
	}{
		{"short", "hello", "", 0},
		{"exactly Max", strings.Repeat("a", Max), "", 0},
		{"one over", strings.Repeat("a", Max+1), strings.Repeat("a", Max), 1},
		{"60 MB", strings.Repeat("z", 60<<20), strings.Repeat("z", Max), 60<<20 - Max},
		// é is two bytes: Max-1 a's then é straddles the line, so it goes whole.
		{"utf-8 boundary", strings.Repeat("a", Max-1) + "é" + "tail", strings.Repeat("a", Max-1), len("é") + 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := String(tc.in)
			if tc.want == "" {
				if got != tc.in {
					t.Fatalf("String changed a value of %d bytes", len(tc.in))
				}
				return
			}
			marker := "… [" + itoa(tc.cut) + " bytes cut]"
			if got != tc.want+marker {
				t.Errorf("String(%d bytes) = %.40q…%q, want the first %d bytes and %q", len(tc.in), got, got[max(0, len(got)-30):], len(tc.want), marker)
			}
			if !utf8.ValidString(got) {
				t.Error("the cut is not on a UTF-8 boundary")
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

type stringer string

func (s stringer) String() string { return string(s) }

func TestHandler(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	var buf bytes.Buffer
	logger := Logger(slog.New(slog.NewJSONHandler(&buf, nil)))
	if Logger(logger) != logger {
		t.Error("Logger wrapped an already capped logger again")
	}
	logger.With("pre", huge).WithGroup("g").Info("m",
		"s", huge, "err", errors.New(huge), "raw", json.RawMessage(huge), "b", []byte(huge),
		"str", stringer(huge), "group", slog.GroupValue(slog.String("inner", huge)), "n", 42, "short", "ok")
	line := buf.String()
	if len(line) > 10*Max {
		t.Fatalf("a record with eight 1 MiB values logged %d bytes", len(line))
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatal(err)
	}
	want := String(huge)
	if rec["pre"] != want {
		t.Errorf("a WithAttrs value was not cut: %.60q", rec["pre"])
	}
	g := rec["g"].(map[string]any)
	for _, k := range []string{"s", "err", "raw", "b", "str"} {
		if g[k] != want {
			t.Errorf("%s was not cut to Max with a marker: %.60q", k, g[k])
		}
	}
	if g["group"].(map[string]any)["inner"] != want {
		t.Error("a value inside a group was not cut")
	}
	if g["n"] != 42.0 || g["short"] != "ok" {
		t.Errorf("short values changed: n=%v short=%v", g["n"], g["short"])
	}

	// A record with no long value passes as it is.
	buf.Reset()
	logger.Info("plain", "a", 1)
	if !strings.Contains(buf.String(), `"msg":"plain","a":1`) {
		t.Errorf("plain record: %s", buf.String())
	}
}

// Prefix cuts on a rune boundary, never inside a UTF-8 sequence.
func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc"},
		{"a€b", 2, "a"}, // € is 3 bytes: 1..3
		{"a€b", 4, "a€"},
		{"€€", 1, ""},
		{"", 0, ""},
	} {
		if got := Prefix(tc.s, tc.n); got != tc.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
