package load

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"
)

func TestHistQuantiles(t *testing.T) {
	var h Hist
	for i := 1; i <= 100000; i++ {
		h.Add(time.Duration(i) * time.Microsecond)
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		got := float64(h.Quantile(q))
		want := q * 100000 * float64(time.Microsecond)
		if math.Abs(got-want)/want > 0.02 {
			t.Errorf("Quantile(%v) = %v, want %v within 2%%", q, time.Duration(got), time.Duration(want))
		}
	}
	if h.Count() != 100000 || h.Max() != 100*time.Millisecond {
		t.Errorf("count %d max %v", h.Count(), h.Max())
	}
}

func TestHistSmallAndEmpty(t *testing.T) {
	var h Hist
	if h.Quantile(0.5) != 0 {
		t.Error("empty histogram has a median")
	}
	h.Add(5)
	h.Add(-1)
	if h.Quantile(1) != 5 || h.Quantile(0) != 0 {
		t.Errorf("quantiles %v %v", h.Quantile(0), h.Quantile(1))
	}
	var o Hist
	o.Add(time.Hour)
	h.Merge(&o)
	if h.Count() != 3 || h.Max() != time.Hour {
		t.Errorf("after merge: count %d max %v", h.Count(), h.Max())
	}
}

func TestBucketsMonotonic(t *testing.T) {
	prev := -1
	for d := time.Duration(0); d < 10*time.Second; d = d*11/10 + 1 {
		b := bucketOf(d)
		if b < prev {
			t.Fatalf("bucketOf(%v) = %d < %d", d, b, prev)
		}
		if v := bucketValue(b); math.Abs(float64(v-d)) > float64(d)/50+1 {
			t.Fatalf("bucketValue(bucketOf(%v)) = %v", d, v)
		}
		prev = b
	}
}

func TestRunCountsAndErrors(t *testing.T) {
	var calls atomic.Int64
	ok := func() error { calls.Add(1); time.Sleep(time.Millisecond); return nil }
	bad := func() error { time.Sleep(time.Millisecond); return errors.New("boom") }
	probes := 0
	r := Run(context.Background(), Config{Concurrency: 2, Warmup: 20 * time.Millisecond, Duration: 100 * time.Millisecond,
		Probe: func() { probes++ }}, []Op{ok, bad})
	if r.Ops == 0 || r.Ops > r.Done || int64(r.Done) != calls.Load() {
		t.Errorf("ops %d done %d calls %d", r.Ops, r.Done, calls.Load())
	}
	if r.Errors == 0 || len(r.Failures) == 0 || r.Failures[0] != "boom" {
		t.Errorf("errors %d failures %q", r.Errors, r.Failures)
	}
	if probes != 2 {
		t.Errorf("%d probes, want 2", probes)
	}
	if r.Latency.Count() != r.Ops || r.Latency.Quantile(0.5) < time.Millisecond {
		t.Errorf("latency count %d p50 %v", r.Latency.Count(), r.Latency.Quantile(0.5))
	}
}

func TestParallel(t *testing.T) {
	var running, peak atomic.Int32
	errs := Parallel(3, 20, func(i int) error {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		running.Add(-1)
		if i == 7 {
			return errors.New("seven")
		}
		return nil
	})
	if peak.Load() > 3 {
		t.Errorf("peak concurrency %d > 3", peak.Load())
	}
	err := FirstError(errs)
	if err == nil || err.Error() != "1 of 20 failed, first: seven" {
		t.Errorf("FirstError = %v", err)
	}
	if FirstError(make([]error, 3)) != nil {
		t.Error("FirstError of successes is not nil")
	}
}
