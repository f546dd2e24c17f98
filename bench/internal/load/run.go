// Package load drives a fixed number of concurrent workers through a
// warm-up and a measured window, and records latency, throughput and
// errors. Each worker owns its client; nothing is shared on the hot path.
package load

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Op is one operation of a worker (a call, a cycle, a listing). It returns
// an error when the operation or its reply check failed.
type Op func() error

// Config sets the shape of a run.
type Config struct {
	Concurrency int
	Warmup      time.Duration
	Duration    time.Duration
	// Probe, when set, is called at the start and at the end of the measured
	// window (for CPU counters); it must be quick.
	Probe func()
}

// Result is what a run measured. Only operations that started and ended
// inside the measured window count in Ops and Latency; every error counts.
type Result struct {
	Done     uint64 // successful operations, warm-up included
	Ops      uint64
	Errors   uint64
	Elapsed  time.Duration // the measured window
	Latency  Hist
	Failures []string // the first few error messages
}

// Rate is operations per second in the measured window.
func (r *Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

const keepFailures = 5

type worker struct {
	hist     Hist
	done     uint64
	ops      uint64
	errors   uint64
	failures []string
}

func (w *worker) fail(err error) {
	w.errors++
	if len(w.failures) < keepFailures {
		w.failures = append(w.failures, err.Error())
	}
}

// Run runs ops[i] in worker i until the window ends or ctx is done.
func Run(ctx context.Context, cfg Config, ops []Op) *Result {
	workers := make([]worker, len(ops))
	start := time.Now()
	from := start.Add(cfg.Warmup)
	until := from.Add(cfg.Duration)

	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Add(1)
		go func(w *worker) {
			defer wg.Done()
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(until) {
					return
				}
				err := op()
				t1 := time.Now()
				if err != nil {
					w.fail(err)
					continue
				}
				w.done++
				if !t0.Before(from) && !t1.After(until) {
					w.hist.Add(t1.Sub(t0))
					w.ops++
				}
			}
		}(&workers[i])
	}
	if cfg.Probe != nil {
		probeAt(ctx, from, cfg.Probe)
		probeAt(ctx, until, cfg.Probe)
	}
	wg.Wait()

	r := &Result{Elapsed: cfg.Duration}
	for i := range workers {
		w := &workers[i]
		r.Ops += w.ops
		r.Done += w.done
		r.Errors += w.errors
		r.Latency.Merge(&w.hist)
		for _, f := range w.failures {
			if len(r.Failures) < keepFailures {
				r.Failures = append(r.Failures, f)
			}
		}
	}
	return r
}

func probeAt(ctx context.Context, t time.Time, probe func()) {
	select {
	case <-time.After(time.Until(t)):
	case <-ctx.Done():
	}
	probe()
}

// Parallel runs n jobs on at most conc goroutines and returns the errors
// (nil entries for successes). It is for setup work: opening sessions,
// closing them.
func Parallel(conc, n int, job func(i int) error) []error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(conc, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = job(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errs
}

// FirstError returns the first non-nil error of errs, wrapped with how many
// failed, or nil.
func FirstError(errs []error) error {
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if first == nil {
		return nil
	}
	return fmt.Errorf("%d of %d failed, first: %w", failed, len(errs), first)
}
