package scenario

import (
	"context"
	"strconv"
	"sync"

	"github.com/luamcp/luamcp/bench/internal/load"
	"github.com/luamcp/luamcp/bench/internal/spec"
)

// spin measures one echo client on spec.PathEcho while spec.Spinners
// sessions of spec.PathSpin keep calling the spin tool: the echo's p99 is
// what a healthy route sees while another route's calls hold every CPU
// (luamcp's target: under 50 ms). The spinners' own rate is reported too.
func spin(ctx context.Context, t *Target, s Scale, r *Result) {
	spinners, err := openClients(t, s, spec.PathSpin, spec.Spinners, true)
	if err != nil {
		r.fail(err)
		return
	}
	echo, err := openClients(t, s, spec.PathEcho, 1, true)
	if err != nil {
		r.fail(err)
		closeClients(s, spinners, true)
		return
	}

	// The spinners run until the echo's measured window is over.
	stop := make(chan struct{})
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		spins int
	)
	for _, c := range spinners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				err := c.CallText(spec.SpinTool, map[string]int{"ms": spec.SpinMillis}, "spun")
				mu.Lock()
				if err != nil {
					r.fail(err)
				} else {
					spins++
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}

	c, n := echo[0], 0
	op := func() error {
		n++
		return c.Echo([]byte("e" + strconv.Itoa(n)))
	}
	m := &cpuMeter{pid: t.PID}
	lr := load.Run(ctx, load.Config{Concurrency: 1, Warmup: s.Warmup, Duration: s.Duration, Probe: m.probe}, []load.Op{op})
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	timed(r, lr, m, "calls/s")
	r.add("spins", "", float64(spins), false)
	if err := closeClients(s, append(spinners, echo...), true); err != nil {
		r.fail(err)
	}
}
