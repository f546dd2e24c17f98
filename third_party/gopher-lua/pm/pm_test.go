package pm

// Patched for luamcp: tests of the bounds of the pattern compiler.

import (
	"context"
	"errors"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// A pattern holds at most 32 captures (Lua 5.1's LUA_MAXCAPTURES), nested or
// not, position captures included.
func TestCompileBoundsCaptures(t *testing.T) {
	nested := func(n int) string { return strings.Repeat("(", n) + "a" + strings.Repeat(")", n) }
	for _, c := range []struct {
		name, pattern string
		ok            bool
	}{
		{"32 nested", nested(32), true},
		{"33 nested", nested(33), false},
		{"32 in a row", strings.Repeat("(a)", 32), true},
		{"33 in a row", strings.Repeat("(a)", 33), false},
		{"32 positions", strings.Repeat("()", 32), true},
		{"33 positions", strings.Repeat("()", 33), false},
		{"33 unclosed", strings.Repeat("(", 33), false},
		{"a million unclosed", strings.Repeat("(", 1e6), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile(nil, c.pattern)
			if c.ok && err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if !c.ok && (err == nil || err.Error() != "too many captures") {
				t.Fatalf("Compile: %v, want too many captures", err)
			}
		})
	}
}

// The parser stops at the 33rd '(' instead of recursing once per '(': a
// megabyte of them compiles on a small stack (it took some 250 bytes of Go
// stack per '(', and a stack past the runtime's maximum is a fatal error no
// recover catches).
func TestCompileNestingUsesLittleStack(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(8 << 20))
	done := make(chan error)
	go func() { // a fresh goroutine: its stack starts small
		_, err := Compile(nil, strings.Repeat("(", 1<<20))
		done <- err
	}()
	if err := <-done; err == nil || err.Error() != "too many captures" {
		t.Fatalf("Compile: %v, want too many captures", err)
	}
}

// Captures nested as deep as allowed match as they should: the matcher's
// backtracking is iterative, whatever the nesting.
func TestNestedCapturesMatch(t *testing.T) {
	p := strings.Repeat("(", 32) + "b+" + strings.Repeat(")", 32)
	md, err := Find(p, []byte("abbbc"), 0, 1)
	if err != nil || len(md) != 1 {
		t.Fatalf("Find: %v, %d matches", err, len(md))
	}
	m := md[0]
	if m.CaptureLength() != 66 {
		t.Fatalf("%d capture positions, want 66", m.CaptureLength())
	}
	for i := 0; i < m.CaptureLength(); i += 2 {
		if m.Capture(i) != 1 || m.Capture(i+1) != 4 {
			t.Fatalf("capture %d is [%d, %d), want [1, 4)", i/2, m.Capture(i), m.Capture(i+1))
		}
	}
}

type ctxGuard struct{ ctx context.Context }

func (g ctxGuard) Err() error        { return g.ctx.Err() }
func (ctxGuard) Reserve(n int) error { return nil }

// A compilation consults its guard as it goes: a cancelled one stops a long
// pattern early.
func TestCompileHonoursGuard(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	_, err := Compile(ctxGuard{ctx}, strings.Repeat("a*", 1e6))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Compile: %v, want %v", err, context.Canceled)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("stopped after %v", d)
	}
	if _, err := Compile(ctxGuard{context.Background()}, strings.Repeat("a*", 1e4)); err != nil {
		t.Fatalf("Compile with a live guard: %v", err)
	}
}
