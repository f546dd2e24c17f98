package hostlib

import (
	"context"
	"runtime"
	"slices"
	"strconv"
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

// TestRegexpProgramsBounded: a pattern is refused, quickly and allocating
// little, when its program would pass the bounds, however short its source.
// "a{1000}" 2,290 times (16 KiB) compiled to 2 million instructions: a call
// with a 100 ms deadline ran 3 s and allocated 1.1 GiB, and the cache kept
// 100 MiB for each such pattern.
func TestRegexpProgramsBounded(t *testing.T) {
	const deadline = 100 * time.Millisecond
	const tooLarge = "re: pattern too large"
	tests := []struct {
		name, pattern string
		ok            bool
	}{
		{"counted repetitions", strings.Repeat("a{1000}", 2290) + "b{1}", false},
		{"just past the bound", strings.Repeat("a{1000}", 33), false},
		{"Unicode classes", strings.Repeat(`\pL`, maxRegexpClasses+1), false},
		{"just within the bound", strings.Repeat("a{1000}", 32), true},
		{"Unicode classes within the bound", strings.Repeat(`[\pL\pN]`, maxRegexpClasses/2), true},
		{"long literal", strings.Repeat("z", maxRegexpLen), true},
	}
	L, _ := newLua(t, nil)
	L.SetMemoryLimit(16 << 20)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			L.SetContext(ctx)
			defer L.RemoveContext()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			got := call(t, L, "re", "test", lua.LString(tt.pattern), lua.LString("x"))
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			if tt.ok {
				if got[0] != lua.LFalse {
					t.Fatalf("re.test = %v, want false", got)
				}
				return
			}
			if len(got) != 2 || got[0] != lua.LNil || !strings.HasPrefix(got[1].String(), tooLarge) {
				t.Fatalf("re.test = %v, want nil, %q...", got, tooLarge)
			}
			if elapsed > deadline {
				t.Errorf("refused after %v, past the call's %v deadline", elapsed, deadline)
			}
			if mib := (after.TotalAlloc - before.TotalAlloc) >> 20; mib > 8 && !raceEnabled {
				t.Errorf("allocated %d MiB to refuse the pattern", mib)
			}
		})
	}
}

// TestRegexpCacheBoundedBySize: the process-wide cache keeps compiled
// patterns up to reCacheBytes, not only up to reCacheSize entries: 512 of
// the largest patterns allowed would keep some 800 MiB.
func TestRegexpCacheBoundedBySize(t *testing.T) {
	reCache.Lock()
	clear(reCache.m)
	reCache.bytes = 0
	reCache.Unlock()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	large := strings.Repeat("a{1000}", 32) // the largest program allowed
	for i := range 40 {
		if _, err := compilePattern(large + "b{" + strconv.Itoa(i) + "}"); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if kept := int64(after.HeapAlloc) - int64(before.HeapAlloc); kept > reCacheBytes {
		t.Errorf("the cache keeps %d MiB, want at most %d MiB", kept>>20, reCacheBytes>>20)
	}
	reCache.Lock()
	defer reCache.Unlock()
	sum := 0
	for _, p := range reCache.m {
		sum += p.size
	}
	if sum != reCache.bytes || sum > reCacheBytes || len(reCache.m) == 0 {
		t.Errorf("the cache holds %d patterns of %d bytes (counted %d), want at most %d bytes",
			len(reCache.m), sum, reCache.bytes, reCacheBytes)
	}
}
