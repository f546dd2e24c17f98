package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/luamcp/luamcp/bench/internal/load"
	"github.com/luamcp/luamcp/bench/internal/spec"
	"github.com/luamcp/luamcp/bench/internal/wire"
)

// clockTick is the unit of CPU times in /proc/<pid>/stat (USER_HZ, 100 on
// every Linux port that matters).
const clockTick = 10 * time.Millisecond

// procCPU returns the user+system CPU time process pid has used.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; the fields that follow it do not.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	ut, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	st, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad CPU times", pid)
	}
	return time.Duration(ut+st) * clockTick, nil
}

// procRSS returns the resident set size of process pid in bytes.
func procRSS(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := bytes.Fields(v)
			if len(f) < 1 {
				break
			}
			kb, err := strconv.ParseUint(string(f[0]), 10, 64)
			if err != nil {
				break
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// selfCPU returns the CPU time this process (the load generator) has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter samples server and generator CPU at the edges of a window.
type cpuMeter struct {
	pid      int
	at       []time.Time
	srv, gen []time.Duration
	err      error
}

func (m *cpuMeter) probe() {
	c, err := procCPU(m.pid)
	if err != nil && m.err == nil {
		m.err = err
	}
	m.at = append(m.at, time.Now())
	m.srv = append(m.srv, c)
	m.gen = append(m.gen, selfCPU())
}

// report adds server CPU per operation and the CPU share of both sides.
func (m *cpuMeter) report(r *Result, ops uint64) {
	if m.err != nil || len(m.at) != 2 || ops == 0 {
		for _, name := range []string{"srv cpu/op", "srv cpu", "gen cpu"} {
			r.Metrics = append(r.Metrics, Metric{Name: name, Missing: true})
		}
		return
	}
	wall := m.at[1].Sub(m.at[0])
	srv, gen := m.srv[1]-m.srv[0], m.gen[1]-m.gen[0]
	r.add("srv cpu/op", "µs", float64(srv.Microseconds())/float64(ops), true)
	r.add("srv cpu", "%", 100*srv.Seconds()/wall.Seconds(), false)
	r.add("gen cpu", "%", 100*gen.Seconds()/wall.Seconds(), false)
}

// perOp is the server's CPU per operation over the window, in µs; false
// when it could not be measured.
func (m *cpuMeter) perOp(ops uint64) (float64, bool) {
	if m.err != nil || len(m.srv) != 2 || ops == 0 {
		return 0, false
	}
	return float64((m.srv[1] - m.srv[0]).Microseconds()) / float64(ops), true
}

// timed reports the figures of a timed run: rate, latency, CPU.
func timed(r *Result, lr *load.Result, m *cpuMeter, unit string) {
	r.absorb(lr)
	if lr.Done == 0 && lr.Errors == 0 {
		r.failf("no operation completed")
	}
	r.add("rate", unit, lr.Rate(), false)
	r.add("p50", "ms", ms(lr.Latency.Quantile(0.50)), true)
	r.add("p99", "ms", ms(lr.Latency.Quantile(0.99)), true)
	r.add("p99.9", "ms", ms(lr.Latency.Quantile(0.999)), true)
	m.report(r, lr.Ops)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// snapshot is the memory and goroutines of a server at one moment.
type snapshot struct {
	spec.Stats
	RSS uint64
}

// statsTimeout is the least time a stats request gets: the server collects
// garbage and returns free memory to the OS before it answers, which for a
// server holding 200,000 sessions (and, for go-sdk, as many goroutines) on
// one CPU while it reaps them took over the 10 s of -timeout: the scenario
// failed on the measuring, not on the server.
const statsTimeout = 2 * time.Minute

// stats asks the server for its live figures (it collects garbage first)
// and reads its RSS.
func stats(t *Target, timeout time.Duration) (snapshot, error) {
	conn := wire.NewConn(t.Addr, max(timeout, statsTimeout))
	defer conn.Close()
	var resp wire.Response
	err := conn.Do(&wire.Request{Method: "GET", Path: spec.PathStats, Accept: "application/json"}, &resp)
	if err != nil {
		return snapshot{}, fmt.Errorf("stats: %w", err)
	}
	if resp.Status != 200 {
		return snapshot{}, fmt.Errorf("stats: HTTP %d", resp.Status)
	}
	var s snapshot
	if err := json.Unmarshal(resp.Body, &s.Stats); err != nil {
		return snapshot{}, fmt.Errorf("stats: %w", err)
	}
	s.RSS, err = procRSS(t.PID)
	return s, err
}
