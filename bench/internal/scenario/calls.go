package scenario

import (
	"context"
	"strconv"

	"github.com/luamcp/luamcp/bench/internal/client"
	"github.com/luamcp/luamcp/bench/internal/load"
	"github.com/luamcp/luamcp/bench/internal/spec"
)

// openClients starts n clients on route, each initialized (with a session
// when session is set), or opened with server/discover on the 2026-07-28
// route. On error it closes what it opened.
func openClients(t *Target, s Scale, route string, n int, session bool) ([]*client.Client, error) {
	return openClientsOver(t, s, H1, route, n, session)
}

// openClientsOver is openClients with clients speaking p.
func openClientsOver(t *Target, s Scale, p Proto, route string, n int, session bool) ([]*client.Client, error) {
	cs := make([]*client.Client, n)
	for i := range cs {
		cs[i] = t.newClient(p, route, s.Timeout)
	}
	open := func(c *client.Client) error { return c.Initialize(session) }
	if route == spec.PathModern {
		open = (*client.Client).Discover // the 2026-07-28 era has no initialize
	}
	err := load.FirstError(load.Parallel(s.Conc, n, func(i int) error { return open(cs[i]) }))
	if err != nil {
		closeClients(s, cs, session)
		return nil, err
	}
	return cs, nil
}

// closeClients ends the clients' sessions (when session is set) and closes
// their connections.
func closeClients(s Scale, cs []*client.Client, session bool) error {
	errs := load.Parallel(s.Conc, len(cs), func(i int) error {
		defer cs[i].Close()
		if session && cs[i].SessionID != "" {
			return cs[i].Delete()
		}
		return nil
	})
	return load.FirstError(errs)
}

// calls is the echo tools/call scenario: conc clients, each on its own
// connection (and session, in session mode), calling as fast as answers come.
func calls(conc int, session bool) func(context.Context, *Target, Scale, *Result) {
	route := spec.PathStateless
	if session {
		route = spec.PathEcho
	}
	return textCalls(conc, route, session, "c", H1, (*client.Client).Echo)
}

// callsOver is the session echo scenario with clients speaking p (HTTP/2
// or HTTP/3), each on its own connection.
func callsOver(conc int, p Proto) func(context.Context, *Target, Scale, *Result) {
	return textCalls(conc, spec.PathEcho, true, "c", p, (*client.Client).Echo)
}

// fetch is the fetch tools/call scenario: conc sessions calling the tool
// that makes one HTTP request to the upstream, as fast as answers come.
func fetch(conc int) func(context.Context, *Target, Scale, *Result) {
	return textCalls(conc, spec.PathFetch, true, "f", H1, (*client.Client).Fetch)
}

// built is the echo scenario on a route whose script builds its tool list
// (1 or spec.BuiltTools tools) inside tools(): conc sessions calling echo.
func built(conc int, route string) func(context.Context, *Target, Scale, *Result) {
	return textCalls(conc, route, true, "b", H1, (*client.Client).Echo)
}

// textCalls runs conc clients on route, each calling a tool whose answer is
// its text argument (call), with a text unique to the client and the call.
func textCalls(conc int, route string, session bool, tag string, p Proto, call func(*client.Client, []byte) error) func(context.Context, *Target, Scale, *Result) {
	return func(ctx context.Context, t *Target, s Scale, r *Result) {
		cs, err := openClientsOver(t, s, p, route, conc, session)
		if err != nil {
			r.fail(err)
			return
		}
		ops := make([]load.Op, conc)
		for i, c := range cs {
			prefix := tag + strconv.Itoa(i) + "-"
			text := []byte(prefix)
			n := 0
			ops[i] = func() error {
				n++
				text = strconv.AppendInt(text[:len(prefix)], int64(n), 10)
				return call(c, text)
			}
		}
		m := &cpuMeter{pid: t.PID}
		lr := load.Run(ctx, load.Config{Concurrency: conc, Warmup: s.Warmup, Duration: s.Duration, Probe: m.probe}, ops)
		timed(r, lr, m, "calls/s")
		if err := closeClients(s, cs, session); err != nil {
			r.fail(err)
		}
	}
}

// modernCalls is the echo tools/call scenario in the 2026-07-28 era: conc
// clients, each on its own connection, opened by one server/discover, then
// calling as fast as answers come, every request self-describing (no
// session, no handshake).
func modernCalls(conc int) func(context.Context, *Target, Scale, *Result) {
	return textCalls(conc, spec.PathModern, false, "m", H1, (*client.Client).EchoModern)
}

// listConc is the number of concurrent listings: a full listing is twenty
// requests, so a few clients keep a server busy.
func listConc(s Scale) int { return min(s.Conc, 4) }

// list pages through the 1,000 tools, listConc clients at a time.
func list(ctx context.Context, t *Target, s Scale, r *Result) {
	cs, err := openClients(t, s, spec.PathTools, listConc(s), true)
	if err != nil {
		r.fail(err)
		return
	}
	pages := make([]int, len(cs)) // per worker: pages of its last listing
	ops := make([]load.Op, len(cs))
	for i, c := range cs {
		ops[i] = func() (err error) {
			pages[i], err = c.ListTools(spec.ToolCount, spec.ToolName)
			return err
		}
	}
	m := &cpuMeter{pid: t.PID}
	lr := load.Run(ctx, load.Config{Concurrency: len(cs), Warmup: s.Warmup, Duration: s.Duration, Probe: m.probe}, ops)
	timed(r, lr, m, "lists/s")
	r.add("pages", "", float64(pages[0]), false)
	if err := closeClients(s, cs, true); err != nil {
		r.fail(err)
	}
}

// progress calls the progress tool, s.Conc sessions at a time; every call
// streams its notifications and result over SSE.
func progress(ctx context.Context, t *Target, s Scale, r *Result) {
	cs, err := openClients(t, s, spec.PathProgress, s.Conc, true)
	if err != nil {
		r.fail(err)
		return
	}
	ops := make([]load.Op, len(cs))
	for i, c := range cs {
		prefix := "p" + strconv.Itoa(i) + "-"
		n := 0
		ops[i] = func() error {
			n++
			return c.Progress(prefix+strconv.Itoa(n), spec.ProgressSteps)
		}
	}
	m := &cpuMeter{pid: t.PID}
	lr := load.Run(ctx, load.Config{Concurrency: len(cs), Warmup: s.Warmup, Duration: s.Duration, Probe: m.probe}, ops)
	timed(r, lr, m, "calls/s")
	if err := closeClients(s, cs, true); err != nil {
		r.fail(err)
	}
}

// openAt starts n session clients on route, client i on the server at
// addrs[i%len(addrs)], each initialized. On error it closes what it opened.
func openAt(s Scale, addrs []string, route string, n int) ([]*client.Client, error) {
	cs := make([]*client.Client, n)
	for i := range cs {
		cs[i] = client.New(addrs[i%len(addrs)], route, s.Timeout)
	}
	err := load.FirstError(load.Parallel(s.Conc, n, func(i int) error { return cs[i].Initialize(true) }))
	if err != nil {
		closeClients(s, cs, true)
		return nil, err
	}
	return cs, nil
}
