// Package metrics exports what a luamcp host does as Prometheus metrics
// (`luamcp serve --metrics-addr`).
//
// The names follow the OpenTelemetry semantic conventions for MCP where they
// define one (mcp.server.operation.duration, mcp.server.session.duration,
// with their attributes as labels, dots turned into underscores); the rest
// are luamcp's own, prefixed luamcp_. No metric has a label per session or
// per user: labels name a route, a method, a tool the server lists, an error
// type, a gate or a reason, all from bounded sets (see [mcp.Operation]).
//
// A [Metrics] is a [host.Observer]: the host's transport and hot reload
// report to it as things happen (histograms and counters), and it reads the
// gauges from [host.Host.Stats] at each scrape, so that they can never drift
// from what they count.
package metrics

import (
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/luamcp/luamcp/host"
	"github.com/luamcp/luamcp/internal/cluster"
	"github.com/luamcp/luamcp/mcp"
)

// DurationBuckets are the bucket bounds, in seconds, of both duration
// histograms: the ones the OpenTelemetry MCP conventions advise.
var DurationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// Metrics holds every luamcp metric in its own registry (with the Go runtime
// and process collectors). It implements [host.Observer]; its methods are
// safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	operations *prometheus.HistogramVec // mcp_server_operation_duration_seconds
	sessions   *prometheus.HistogramVec // mcp_server_session_duration_seconds
	refusals   *prometheus.CounterVec   // luamcp_refusals_total
	dropped    *prometheus.CounterVec   // luamcp_pushes_dropped_total
	reloads    *prometheus.CounterVec   // luamcp_reloads_total
	forwarded  *prometheus.CounterVec   // luamcp_cluster_forwarded_total

	// stats reads the gauges (SetStats); nil until set: no gauge then.
	stats atomic.Pointer[func() []host.RouteStats]
	// replay reads the process's replay gauges (SetReplay); nil until set.
	replay atomic.Pointer[func() (kept, budget int64)]
	// cluster reads the node's NATS figures (SetCluster); nil outside a
	// cluster: no such series then.
	cluster atomic.Pointer[func() cluster.Stats]
}

var _ host.Observer = (*Metrics)(nil)

// Names of the labels.
const (
	labelRoute  = "route"
	labelMethod = "mcp_method_name"
	labelTool   = "gen_ai_tool_name"
	labelError  = "error_type"
)

// The gauges, read from host.Host.Stats at each scrape.
var (
	sessionsDesc = prometheus.NewDesc("luamcp_sessions_active",
		"Live MCP sessions of the route (the 2025 protocol versions; the 2026-07-28 era has none).", []string{labelRoute}, nil)
	statesDesc = prometheus.NewDesc("luamcp_lua_states",
		"Lua states of the route's script open now: pooled, owned by a session, or lent to a request.", []string{labelRoute}, nil)
	runningDesc = prometheus.NewDesc("luamcp_lua_calls_running",
		"Lua calls of the route's script holding a slot of --max-running.", []string{labelRoute}, nil)
	tasksDesc = prometheus.NewDesc("luamcp_tasks",
		"Tasks of the route (mcp.task: the 2026-07-28 extension and the 2025-11-25 experimental tasks) by status: working and input_required run; completed, failed and cancelled keep their outcome until their ttl.", []string{labelRoute, "status"}, nil)
	queuedDesc = prometheus.NewDesc("luamcp_lua_calls_queued",
		"Lua calls of the route's script waiting for a slot of --max-running.", []string{labelRoute}, nil)
	replayKeptDesc = prometheus.NewDesc("luamcp_replay_kept_bytes",
		"Bytes of the events all routes keep for clients to read or resume: GET channels, subscriptions/listen streams, resumable POST streams.", nil, nil)
	replayBudgetDesc = prometheus.NewDesc("luamcp_replay_budget_bytes",
		"The bound on luamcp_replay_kept_bytes (--replay-budget-mb): past it a stream pushed to gives up its own oldest events.", nil, nil)
	// endedDesc is a counter, read from the host like the gauges.
	endedDesc = prometheus.NewDesc("luamcp_lua_states_ended_total",
		"Lua states of the route's ended sessions: given back to the pool as pristine (recycled) or closed.", []string{labelRoute, "outcome"}, nil)
)

// The cluster's series, read from cluster.Node.Stats at each scrape.
var (
	pushesDesc = prometheus.NewDesc("luamcp_cluster_pushes_total",
		"Pushes this node published on NATS for the other nodes (sent), could not publish while NATS was down (unsent), and got from them (received): broadcasts, resource updates, list_changed, notify and log to their sessions.", []string{"direction"}, nil)
	natsUpDesc = prometheus.NewDesc("luamcp_cluster_nats_connected",
		"1 while the node's NATS connection is up, 0 while it is down (pushes then reach this node's sessions only).", nil, nil)
	natsReconnectsDesc = prometheus.NewDesc("luamcp_cluster_nats_reconnects_total",
		"Times the node's NATS connection came back after a loss.", nil, nil)
	linksDesc = prometheus.NewDesc("luamcp_cluster_links",
		"Links open between this node and the others, which carry forwarded POSTs and DELETEs: opened by this node (out) or by the others (in).", []string{"end"}, nil)
)

// New returns the metrics, all zero.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		operations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcp_server_operation_duration_seconds",
			Help:    "MCP request duration as observed on the server, from its arrival until its answer (OpenTelemetry mcp.server.operation.duration).",
			Buckets: DurationBuckets,
		}, []string{labelMethod, labelTool, labelError, labelRoute}),
		sessions: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcp_server_session_duration_seconds",
			Help:    "Lifetime of the MCP sessions that ended (OpenTelemetry mcp.server.session.duration).",
			Buckets: DurationBuckets,
		}, []string{labelRoute}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "luamcp_refusals_total",
			Help: "Requests refused before they ran, by the gate that refused them.",
		}, []string{labelRoute, "gate"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "luamcp_pushes_dropped_total",
			Help: "Server pushes no client will receive, by reason.",
		}, []string{labelRoute, "reason"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "luamcp_reloads_total",
			Help: "Hot reloads of a mounted script, by result (ok, or failed: the running version stays).",
		}, []string{labelRoute, "result"}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "luamcp_cluster_forwarded_total",
			Help: "Requests for a session of another node that this node forwarded to it (out), and requests another node forwarded to this one (in).",
		}, []string{labelRoute, "direction"}),
	}
	m.reg.MustRegister(m.operations, m.sessions, m.refusals, m.dropped, m.reloads, m.forwarded,
		gauges{m}, clusterStats{m},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// SetStats sets where the gauges are read at each scrape: the host's
// [host.Host.Stats]. The host is built with the Metrics as its observer, so
// this comes after it.
func (m *Metrics) SetStats(stats func() []host.RouteStats) { m.stats.Store(&stats) }

// SetReplay sets where the replay gauges are read at each scrape: the
// host's [host.Host.Replay].
func (m *Metrics) SetReplay(replay func() (kept, budget int64)) { m.replay.Store(&replay) }

// SetCluster sets where the cluster's series are read at each scrape: the
// node's [cluster.Node.Stats] (`serve --nats`).
func (m *Metrics) SetCluster(stats func() cluster.Stats) { m.cluster.Store(&stats) }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is where the metrics are registered (for tests, and for a program
// that serves them with its own).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// label returns s as a label value: the client library panics on one that
// is not UTF-8, which a route path or tool name from a script could be
// (host refuses such paths; this keeps a metric from ever taking the
// process down).
func label(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// Operation implements mcp.Observer.
func (m *Metrics) Operation(op mcp.Operation) {
	m.operations.WithLabelValues(op.Method, label(op.Tool), op.ErrorType, label(op.Route)).Observe(op.Duration.Seconds())
}

// SessionEnded implements mcp.Observer.
func (m *Metrics) SessionEnded(route string, lifetime time.Duration) {
	m.sessions.WithLabelValues(label(route)).Observe(lifetime.Seconds())
}

// Refused implements mcp.Observer.
func (m *Metrics) Refused(route string, gate mcp.Gate) {
	m.refusals.WithLabelValues(label(route), string(gate)).Inc()
}

// PushesDropped implements mcp.Observer.
func (m *Metrics) PushesDropped(route string, reason mcp.DropReason, n int) {
	m.dropped.WithLabelValues(label(route), string(reason)).Add(float64(n))
}

// Forwarded implements mcp.Observer.
func (m *Metrics) Forwarded(route string, dir mcp.Direction) {
	m.forwarded.WithLabelValues(label(route), string(dir)).Inc()
}

// Reloaded implements host.Observer.
func (m *Metrics) Reloaded(route string, ok bool) {
	result := "ok"
	if !ok {
		result = "failed"
	}
	m.reloads.WithLabelValues(label(route), result).Inc()
}

// gauges collects the gauges of Metrics.stats at each scrape.
type gauges struct{ m *Metrics }

func (g gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsDesc
	ch <- statesDesc
	ch <- runningDesc
	ch <- queuedDesc
	ch <- endedDesc
	ch <- tasksDesc
	ch <- replayKeptDesc
	ch <- replayBudgetDesc
}

func (g gauges) Collect(ch chan<- prometheus.Metric) {
	if replay := g.m.replay.Load(); replay != nil {
		kept, budget := (*replay)()
		ch <- prometheus.MustNewConstMetric(replayKeptDesc, prometheus.GaugeValue, float64(kept))
		ch <- prometheus.MustNewConstMetric(replayBudgetDesc, prometheus.GaugeValue, float64(budget))
	}
	stats := g.m.stats.Load()
	if stats == nil {
		return
	}
	for _, r := range (*stats)() {
		for _, v := range [...]struct {
			desc *prometheus.Desc
			n    int
		}{{sessionsDesc, r.Sessions}, {statesDesc, r.LuaStates}, {runningDesc, r.Running}, {queuedDesc, r.Queued}} {
			ch <- prometheus.MustNewConstMetric(v.desc, prometheus.GaugeValue, float64(v.n), label(r.Path))
		}
		ch <- prometheus.MustNewConstMetric(endedDesc, prometheus.CounterValue, float64(r.StatesRecycled), label(r.Path), "recycled")
		ch <- prometheus.MustNewConstMetric(endedDesc, prometheus.CounterValue, float64(r.StatesClosed), label(r.Path), "closed")
		for i, n := range r.Tasks {
			ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(n), label(r.Path), mcp.TaskStatuses[i])
		}
	}
}

// clusterStats collects the series of Metrics.cluster at each scrape.
type clusterStats struct{ m *Metrics }

func (c clusterStats) Describe(ch chan<- *prometheus.Desc) {
	ch <- pushesDesc
	ch <- natsUpDesc
	ch <- natsReconnectsDesc
	ch <- linksDesc
}

func (c clusterStats) Collect(ch chan<- prometheus.Metric) {
	stats := c.m.cluster.Load()
	if stats == nil {
		return
	}
	s := (*stats)()
	up := 0.0
	if s.Connected {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(pushesDesc, prometheus.CounterValue, float64(s.PushesSent), "sent")
	ch <- prometheus.MustNewConstMetric(pushesDesc, prometheus.CounterValue, float64(s.PushesReceived), "received")
	ch <- prometheus.MustNewConstMetric(pushesDesc, prometheus.CounterValue, float64(s.PushesUnsent), "unsent")
	ch <- prometheus.MustNewConstMetric(natsUpDesc, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(natsReconnectsDesc, prometheus.CounterValue, float64(s.Reconnects))
	ch <- prometheus.MustNewConstMetric(linksDesc, prometheus.GaugeValue, float64(s.LinksOut), "out")
	ch <- prometheus.MustNewConstMetric(linksDesc, prometheus.GaugeValue, float64(s.LinksIn), "in")
}
