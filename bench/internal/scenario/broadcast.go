package scenario

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/luamcp/luamcp/bench/internal/client"
	"github.com/luamcp/luamcp/bench/internal/load"
	"github.com/luamcp/luamcp/bench/internal/spec"
)

// rounds records when each listener received each broadcast.
type rounds struct {
	n     int
	at    [][]time.Time // [round][listener]
	count []atomic.Int32
	done  []chan struct{}
	dups  atomic.Int32
}

func newRounds(k, listeners int) *rounds {
	r := &rounds{n: listeners, at: make([][]time.Time, k), count: make([]atomic.Int32, k), done: make([]chan struct{}, k)}
	for i := range r.at {
		r.at[i] = make([]time.Time, listeners)
		r.done[i] = make(chan struct{})
	}
	return r
}

// seen records that listener l received round k at t. Round 0 is the
// warm-up, which may be sent more than once.
func (r *rounds) seen(k, l int, t time.Time) {
	if k < 0 || k >= len(r.at) {
		return
	}
	if !r.at[k][l].IsZero() {
		if k > 0 {
			r.dups.Add(1)
		}
		return
	}
	r.at[k][l] = t
	if int(r.count[k].Add(1)) == r.n {
		close(r.done[k])
	}
}

var markerPrefix = []byte(`"bcast-`)

// roundOf finds the broadcast marker in a notification and returns its round.
func roundOf(data []byte) (int, bool) {
	i := bytes.Index(data, markerPrefix)
	if i < 0 {
		return 0, false
	}
	rest := data[i+len(markerPrefix):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return 0, false
	}
	k, err := strconv.Atoi(string(rest[:j]))
	return k, err == nil
}

func marker(k int) string { return "bcast-" + strconv.Itoa(k) }

// broadcast opens s.Listeners sessions, each with its GET stream open, and
// measures how long one broadcast takes to reach the last of them: from
// sending the tools/call that broadcasts to the last delivery.
func broadcast(ctx context.Context, t *Target, s Scale, r *Result) {
	last, all := broadcastAcross(ctx, []string{t.Addr}, s, r)
	if len(last) == 0 {
		return
	}
	r.add("last delivery", "ms", ms(quantile(last, 0.5)), true)
	r.add("best", "ms", ms(last[0]), true)
	r.add("p50 delivery", "ms", ms(quantile(all, 0.5)), true)
}

// clusterBroadcast is broadcast on a cluster: the sessions are spread over
// the nodes, each opened and listened to on its node (as a load balancer
// that learnt stickiness routes them), and the broadcast is made on the
// first node, so two thirds of the deliveries cross NATS.
func clusterBroadcast(ctx context.Context, t *Target, s Scale, r *Result) {
	last, all := broadcastAcross(ctx, t.Nodes, s, r)
	if len(last) == 0 {
		return
	}
	r.add("last delivery", "ms", ms(quantile(last, 0.5)), true)
	r.add("last p99", "ms", ms(quantile(last, 0.99)), true)
	r.add("best", "ms", ms(last[0]), true)
	r.add("p50 delivery", "ms", ms(quantile(all, 0.5)), true)
}

// quantile is the q-quantile of sorted ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

// broadcastAcross opens s.Listeners sessions with their GET streams,
// session i on addrs[i%len(addrs)], and broadcasts s.Rounds times from a
// session on addrs[0]. It returns, sorted, the time to the last delivery of
// each round and the time to every delivery, from the broadcasting
// tools/call.
func broadcastAcross(ctx context.Context, addrs []string, s Scale, r *Result) (last, all []time.Duration) {
	n := s.Listeners
	cs, err := openAt(s, addrs, spec.PathBroadcast, n)
	if err != nil {
		r.fail(err)
		return nil, nil
	}
	defer func() {
		if err := closeClients(s, cs, true); err != nil {
			r.fail(err)
		}
	}()
	// The official SDK sends log messages only once the client has set a
	// level; the others accept it too.
	err = load.FirstError(load.Parallel(s.Conc, n, func(i int) error {
		defer cs[i].Close()
		return cs[i].SetLevel("info")
	}))
	if err != nil {
		r.fail(err)
		return nil, nil
	}
	trig, err := openAt(s, addrs[:1], spec.PathBroadcast, 1)
	if err != nil {
		r.fail(err)
		return nil, nil
	}
	defer closeClients(s, trig, true)

	rec := newRounds(s.Rounds+1, n)
	var (
		stopping   atomic.Bool
		mu         sync.Mutex
		listenErrs []error
		wg         sync.WaitGroup
		streams    = make([]*client.Listener, n)
	)
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Some servers send the response header only with the first event.
			l, err := c.Listen(addrs[i%len(addrs)], 30*time.Second)
			if err == nil {
				mu.Lock()
				streams[i] = l
				mu.Unlock()
			}
			for err == nil {
				var data []byte
				data, err = l.Next(time.Now().Add(time.Minute))
				if k, ok := roundOf(data); ok && err == nil {
					rec.seen(k, i, time.Now())
				}
			}
			if !stopping.Load() {
				mu.Lock()
				listenErrs = append(listenErrs, err)
				mu.Unlock()
			}
		}()
	}
	defer func() {
		stopping.Store(true)
		mu.Lock()
		for _, l := range streams {
			if l != nil {
				l.Close()
			}
		}
		mu.Unlock()
		wg.Wait()
		for _, err := range listenErrs {
			r.fail(fmt.Errorf("GET stream: %w", err))
		}
	}()

	// Warm-up: repeat until every stream is attached and has received it.
	warm := time.Now().Add(20 * time.Second)
	failing := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(listenErrs) > 0
	}
	for !failing() {
		if err := trig[0].CallText(spec.BroadcastTool, map[string]string{"marker": marker(0)}, "ok"); err != nil {
			r.fail(err)
			return nil, nil
		}
		select {
		case <-rec.done[0]:
		case <-time.After(500 * time.Millisecond):
			if time.Now().Before(warm) {
				continue
			}
			r.failf("warm-up broadcast reached %d of %d streams", rec.count[0].Load(), n)
			return nil, nil
		}
		break
	}

	for k := 1; k <= s.Rounds && ctx.Err() == nil; k++ {
		time.Sleep(20 * time.Millisecond)
		t0 := time.Now()
		if err := trig[0].CallText(spec.BroadcastTool, map[string]string{"marker": marker(k)}, "ok"); err != nil {
			r.fail(err)
			return nil, nil
		}
		select {
		case <-rec.done[k]:
		case <-time.After(10 * time.Second):
			r.failf("broadcast %d reached %d of %d streams in 10s", k, rec.count[k].Load(), n)
			return nil, nil
		}
		var worst time.Duration
		for _, at := range rec.at[k] {
			d := at.Sub(t0)
			all = append(all, d)
			worst = max(worst, d)
		}
		last = append(last, worst)
	}
	if d := rec.dups.Load(); d > 0 {
		r.failf("%d duplicate deliveries", d)
	}
	slices.Sort(last)
	slices.Sort(all)
	return last, all
}
