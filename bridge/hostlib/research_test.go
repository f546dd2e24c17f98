package hostlib

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// TestWatchedSearchesMatchRegexp: a search that watches the call's context
// (pattern.each and what is built on it) finds what regexp's own functions
// find, empty matches, assertions that look behind the resume point and
// invalid UTF-8 included.
func TestWatchedSearchesMatchRegexp(t *testing.T) {
	saved := riskyWork
	riskyWork = -1 // every search is risky
	t.Cleanup(func() { riskyWork = saved })
	L := lua.NewState()
	t.Cleanup(L.Close)
	L.SetContext(context.Background())
	patterns := []string{
		``, `a`, `a*`, `a?`, `x*`, `\b`, `\B`, `\bw\w*`, `^`, `$`, `^a`, `(?m)^\w+`, `(?m)$`,
		`(a)|(b)`, `(?P<k>\w+)=(?P<v>\w*)`, `(a*)(b?)`, `\s+`, `.`, `(?s).`, `[^,]*`, `,`,
		`(?i)é+`, `\A|\z`, `a|`, `|a`, `\d+(\.\d+)?`, `\Q`, `a\Q)(`, `\Qa,\E|b`,
	}
	subjects := []string{
		"", "a", "aaa", "abab", "word, other word", "k=v, k2=, =x", "\n\nline1\nline2\n",
		"héé É  é", "\xff\xfeab\xe2\x82", "1.5 and 22 and .7", "bbb", ",,a,,b,",
	}
	for _, src := range patterns {
		p, err := newPattern(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range subjects {
			if !p.risky(L, s) {
				t.Fatal("the watched path is not taken")
			}
			for _, n := range []int{-1, 0, 1, 2, 5} {
				if got, want := p.findAll(L, s, n), p.re.FindAllStringSubmatch(s, n); !slices.EqualFunc(got, want, slices.Equal) {
					t.Errorf("find_all(%q, %q, %d) = %q, want %q", src, s, n, got, want)
				}
				if got, want := p.split(L, s, n), p.re.Split(s, n); !slices.Equal(got, want) {
					t.Errorf("split(%q, %q, %d) = %q, want %q", src, s, n, got, want)
				}
			}
			for _, repl := range []string{"<$0>", "[${1}]", "", "$$"} {
				if got, want := p.replace(L, s, repl), p.re.ReplaceAllString(s, repl); got != want {
					t.Errorf("replace(%q, %q, %q) = %q, want %q", src, s, repl, got, want)
				}
			}
			if got, want := submatches(s, p.index(L, s, 0)), p.re.FindStringSubmatch(s); !slices.Equal(got, want) {
				t.Errorf("match(%q, %q) = %q, want %q", src, s, got, want)
			}
		}
	}
}

// TestSearchesStopWithTheirCall: a pattern that runs thousands of threads on
// each byte ends its search when the call's context does. Each of these took
// 16 s or more on a quarter MiB, and would take about 17 minutes on the
// 16 MiB the module accepts.
func TestSearchesStopWithTheirCall(t *testing.T) {
	L, _ := newLua(t, nil)
	L.SetGlobal("subject", lua.LString(strings.Repeat("a", 1<<20)))
	L.SetGlobal("slow", lua.LString(strings.Repeat("a?", 4000)+"b"))
	for _, call := range []string{
		`re.match(slow, subject)`, `re.test(slow, subject)`, `re.find_all(slow, subject)`,
		`re.split(slow, subject)`, `re.replace(slow, subject, "x")`,
	} {
		t.Run(call, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			L.SetContext(ctx)
			defer L.RemoveContext()
			start := time.Now()
			err := L.DoString(call)
			// A liveness bound, not a measure: without the watch each of
			// these runs for minutes.
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("%s returned after %v", call, d)
			}
			if err == nil || !strings.Contains(err.Error(), "context deadline exceeded") {
				t.Errorf("%s: %v, want the context's error", call, err)
			}
		})
	}
}
