package scenario

import (
	"context"
	"strconv"

	"github.com/luamcp/luamcp/bench/internal/client"
	"github.com/luamcp/luamcp/bench/internal/load"
	"github.com/luamcp/luamcp/bench/internal/spec"
)

// clusterCalls measures what forwarding costs a tools/call: s.Conc sessions
// are opened on the first node (their owner) and call echo back to back,
// first on the owner (local), then through the second node, which forwards
// every request to the owner. The headline is the forwarded call's cost
// relative to the local one (local calls/s over forwarded calls/s): the
// issue's target is at most 1.5.
func clusterCalls(ctx context.Context, t *Target, s Scale, r *Result) {
	if len(t.Nodes) < 2 {
		r.failf("a cluster of %d nodes: forwarding needs two", len(t.Nodes))
		return
	}
	owners, err := openAt(s, t.Nodes[:1], spec.PathEcho, s.Conc)
	if err != nil {
		r.fail(err)
		return
	}
	defer func() {
		if err := closeClients(s, owners, true); err != nil {
			r.fail(err)
		}
	}()
	// The same sessions, reached through another node.
	via := make([]*client.Client, len(owners))
	for i, o := range owners {
		via[i] = client.New(t.Nodes[1], spec.PathEcho, s.Timeout)
		via[i].SessionID, via[i].Version = o.SessionID, o.Version
	}
	defer func() {
		for _, c := range via {
			c.Close()
		}
	}()

	run := func(cs []*client.Client, tag string) (*load.Result, *cpuMeter) {
		ops := make([]load.Op, len(cs))
		for i, c := range cs {
			prefix := tag + strconv.Itoa(i) + "-"
			text := []byte(prefix)
			n := 0
			ops[i] = func() error {
				n++
				text = strconv.AppendInt(text[:len(prefix)], int64(n), 10)
				return c.Echo(text)
			}
		}
		m := &cpuMeter{pid: t.PID}
		lr := load.Run(ctx, load.Config{Concurrency: len(cs), Warmup: s.Warmup, Duration: s.Duration, Probe: m.probe}, ops)
		r.absorb(lr)
		if lr.Ops == 0 {
			r.failf("%s: no call completed in the window", tag)
		}
		return lr, m
	}
	local, lm := run(owners, "local")
	fwd, fm := run(via, "forwarded")
	if local.Ops == 0 || fwd.Ops == 0 {
		return
	}
	lp50, fp50 := local.Latency.Quantile(0.5), fwd.Latency.Quantile(0.5)
	r.add("forward cost", "x", local.Rate()/fwd.Rate(), true)
	r.add("p50 ratio", "x", float64(fp50)/float64(lp50), true)
	r.add("local", "calls/s", local.Rate(), false)
	r.add("forwarded", "calls/s", fwd.Rate(), false)
	r.add("local p50", "ms", ms(lp50), true)
	r.add("forwarded p50", "ms", ms(fp50), true)
	if l, ok := lm.perOp(local.Ops); ok {
		r.add("local cpu/op", "µs", l, true)
	}
	if f, ok := fm.perOp(fwd.Ops); ok {
		r.add("forwarded cpu/op", "µs", f, true)
	}
}
