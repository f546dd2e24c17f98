package luavm

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// DefaultMemoryLimit is the heap size past which running Lua calls are
// cancelled (Config.MemoryLimit).
const DefaultMemoryLimit = 1 << 30

// errMemoryLimit is the cause given to calls the watchdog cancels.
var errMemoryLimit = errors.New("memory limit exceeded")

const (
	// watchInterval is how often the heap is sampled while calls run.
	watchInterval = 5 * time.Millisecond
	// gcInterval spaces the collections forced to tell garbage from growth.
	gcInterval = 100 * time.Millisecond
)

// heapMetric is the bytes of heap objects, live or not yet swept: what
// allocation loops grow. Reading it does not stop the world.
const heapMetric = "/memory/classes/heap/objects:bytes"

// A watchdog cancels its owner's running Lua calls when the process heap
// passes a limit. Cancellation reaches Lua between instructions, so an
// allocation loop stops within a few milliseconds of crossing the line.
//
// The heap is the process's, so every script's watchdog sees the same number:
// under pressure, all running calls are cancelled, not only the culprit's.
// The sampling goroutine runs only while calls run.
type watchdog struct {
	limit  uint64
	logger *slog.Logger

	mu      sync.Mutex
	calls   map[*watched]struct{}
	running bool
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

// watched is one registered call.
type watched struct{ cancel context.CancelCauseFunc }

// newWatchdog returns a watchdog for limit bytes; limit < 0 disables it and
// 0 means DefaultMemoryLimit.
func newWatchdog(limit int64, logger *slog.Logger) *watchdog {
	if limit < 0 {
		return nil
	}
	if limit == 0 {
		limit = DefaultMemoryLimit
	}
	return &watchdog{
		limit:  uint64(limit),
		logger: logger,
		calls:  make(map[*watched]struct{}),
		stop:   make(chan struct{}),
	}
}

// add registers a running call: c.cancel is called with errMemoryLimit when
// the limit is passed. Nothing happens when the watchdog is off or closed.
func (w *watchdog) add(c *watched) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.calls[c] = struct{}{}
	if !w.running {
		w.running = true
		w.wg.Add(1)
		go w.loop()
	}
}

// remove unregisters a call added with add.
func (w *watchdog) remove(c *watched) {
	if w == nil {
		return
	}
	w.mu.Lock()
	delete(w.calls, c)
	w.mu.Unlock()
}

// close stops the sampling goroutine and waits for it.
func (w *watchdog) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.stop)
	}
	w.mu.Unlock()
	w.wg.Wait()
}

func (w *watchdog) loop() {
	defer w.wg.Done()
	sample := []metrics.Sample{{Name: heapMetric}}
	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	var lastGC time.Time
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		w.mu.Lock()
		if len(w.calls) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()

		if heap(sample) <= w.limit || time.Since(lastGC) < gcInterval {
			continue
		}
		// Over the line: collect first, so that garbage waiting for the
		// collector does not count as growth.
		runtime.GC()
		lastGC = time.Now()
		h := heap(sample)
		if h <= w.limit {
			continue
		}
		w.mu.Lock()
		// Logged first, so that the record precedes the calls' failures.
		w.logger.Error("memory limit exceeded: running Lua calls cancelled",
			"heap_bytes", h, "limit_bytes", w.limit, "calls", len(w.calls))
		for c := range w.calls {
			c.cancel(errMemoryLimit)
			delete(w.calls, c)
		}
		w.mu.Unlock()
	}
}

func heap(sample []metrics.Sample) uint64 {
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}
