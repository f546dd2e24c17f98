package luavm

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// DefaultMemoryLimit is the heap size past which a running Lua call is
// cancelled (Config.MemoryLimit).
const DefaultMemoryLimit = 1 << 30

// errMemoryLimit is the cause given to calls the watchdog cancels.
var errMemoryLimit = errors.New("memory limit exceeded")

const (
	// watchInterval is how often the heap is sampled while calls run. The
	// per-state budgets stop what scripts allocate before it happens; this
	// is the backstop, and at 5 ms its wake-ups took 2% of a busy server's
	// CPU.
	watchInterval = 25 * time.Millisecond
	// gcInterval spaces the collections forced to tell garbage from growth,
	// and so the cancellations: a cancelled call needs that long to unwind
	// and have its memory collected.
	gcInterval = 100 * time.Millisecond
)

// heapMetric is the bytes of heap objects, live or not yet swept: what
// allocation loops grow. Reading it does not stop the world.
const heapMetric = "/memory/classes/heap/objects:bytes"

// Each Lua state has its own memory budget (memory_limit_mb), checked before
// every allocation a script controls: that is the defence. The heap watchdog
// is the last resort behind it, for memory the budgets do not see (Go buffers
// of the transport, many states each within its budget). The heap is the
// process's, so one watcher samples it for every script; past a script's
// ceiling it cancels the one running call whose state holds the most
// accounted memory (lua.LState.MemoryAccounted), not every call, then gives
// the collector time before it judges again. Its goroutine runs only while
// calls run.
var heapWatch = &heapWatcher{calls: make(map[*watched]struct{})}

type heapWatcher struct {
	mu      sync.Mutex
	calls   map[*watched]struct{}
	running bool
}

// A watchdog is a script's handle on heapWatch: the ceiling its calls are
// held to, and where to log.
type watchdog struct {
	limit  uint64
	logger *slog.Logger
}

// watched is one registered call.
type watched struct {
	w      *watchdog
	cancel context.CancelCauseFunc
	state  *lua.LState // the state the call runs on
}

// newWatchdog returns a handle for limit bytes; limit < 0 disables it and
// 0 means DefaultMemoryLimit.
func newWatchdog(limit int64, logger *slog.Logger) *watchdog {
	if limit < 0 {
		return nil
	}
	if limit == 0 {
		limit = DefaultMemoryLimit
	}
	return &watchdog{limit: uint64(limit), logger: logger}
}

// add registers a running call: c.cancel is called with errMemoryLimit when
// the heap passes the limit and c's state holds the most memory. Nothing
// happens when the watchdog is off.
func (w *watchdog) add(c *watched) {
	if w == nil {
		return
	}
	c.w = w
	h := heapWatch
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[c] = struct{}{}
	if !h.running {
		h.running = true
		go h.loop()
	}
}

// remove unregisters a call added with add.
func (w *watchdog) remove(c *watched) {
	if w == nil {
		return
	}
	h := heapWatch
	h.mu.Lock()
	delete(h.calls, c)
	h.mu.Unlock()
}

func (h *heapWatcher) loop() {
	sample := []metrics.Sample{{Name: heapMetric}}
	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	var lastGC time.Time
	for range tick.C {
		h.mu.Lock()
		if len(h.calls) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		lowest := uint64(0)
		for c := range h.calls {
			if lowest == 0 || c.w.limit < lowest {
				lowest = c.w.limit
			}
		}
		h.mu.Unlock()

		if heap(sample) <= lowest || time.Since(lastGC) < gcInterval {
			continue
		}
		// Over a line: collect first, so that garbage waiting for the
		// collector does not count as growth.
		runtime.GC()
		lastGC = time.Now()
		hp := heap(sample)
		h.mu.Lock()
		var victim *watched
		var most int64
		for c := range h.calls {
			if hp <= c.w.limit {
				continue
			}
			if n := c.state.MemoryAccounted(); victim == nil || n > most {
				victim, most = c, n
			}
		}
		if victim != nil {
			delete(h.calls, victim)
			// Logged first, so that the record precedes the call's failure.
			victim.w.logger.Error("memory limit exceeded: the Lua call holding the most memory is cancelled",
				"heap_bytes", hp, "limit_bytes", victim.w.limit, "state_bytes", most)
			victim.cancel(errMemoryLimit)
		}
		h.mu.Unlock()
	}
}

func heap(sample []metrics.Sample) uint64 {
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}
