// Package spec is the contract between the benchmark harness and the servers
// it measures: the routes every server mounts, the tools they serve, and the
// lines and documents a server process reports about itself.
package spec

import "fmt"

// Routes. A server mounts the ones it can serve; a scenario whose route a
// server does not mount is reported as n/a for that server.
const (
	// PathEcho serves the echo tool in session mode.
	PathEcho = "/mcp/echo"
	// PathStateless serves the echo tool in stateless mode.
	PathStateless = "/mcp/echo_stateless"
	// PathModern serves the echo tool to 2026-07-28 requests: stateless, no
	// handshake, every request carrying its _meta and its Mcp-Method and
	// Mcp-Name headers. Only a server that speaks that era mounts it.
	PathModern = "/mcp/echo_modern"
	// PathChurn serves the echo tool in session mode with an idle TTL given
	// by the server's -ttl flag, so abandoned sessions get reaped during a run.
	PathChurn = "/mcp/churn"
	// PathTools serves ToolCount tools, listed PageSize at a time (session mode).
	PathTools = "/mcp/tools1000"
	// PathProgress serves the progress tool (session mode, SSE answers).
	PathProgress = "/mcp/progress"
	// PathBroadcast serves the broadcast tool (session mode): every session
	// joins BroadcastChannel and receives what the tool pushes on its GET stream.
	PathBroadcast = "/mcp/broadcast"
	// PathFetch serves the fetch tool (session mode): each call makes one
	// HTTP request to the upstream server.
	PathFetch = "/mcp/fetch"
	// PathSpin serves the spin tool (session mode). Only luamcp mounts it:
	// the spin scenario checks its scheduler's fairness across routes.
	PathSpin = "/mcp/spin"
	// PathBuilt1 and PathBuilt100 serve the echo tool in session mode, alone
	// and as the last of BuiltTools tools. luamcp's scripts build the list
	// inside tools(), the natural way to write it, so that a tools/call
	// costs the list unless luamcp reuses it; the Go servers register the
	// same tools once.
	PathBuilt1   = "/mcp/built1"
	PathBuilt100 = "/mcp/built100"
	// PathStats is the debug endpoint answering a Stats document.
	PathStats = "/debug/stats"
)

// Routes lists every route, in the order scenarios use them.
var Routes = []string{PathEcho, PathStateless, PathModern, PathChurn, PathTools, PathProgress, PathBroadcast, PathFetch, PathSpin, PathBuilt1, PathBuilt100}

// Tool shapes shared by every server.
const (
	// EchoTool returns its "text" argument as one text block.
	EchoTool = "echo"
	// ProgressTool sends ProgressSteps notifications/progress (progress 1..N,
	// total N) to the call's progress token, then returns the text "done".
	ProgressTool = "progress"
	// ProgressSteps is the number of progress notifications per call.
	ProgressSteps = 10
	// BroadcastTool pushes notifications/message {level: "info", data:
	// {marker: <its "marker" argument>}} to every session of the route, then
	// returns the text "ok".
	BroadcastTool = "broadcast"
	// BroadcastChannel is the pubsub channel broadcast sessions join.
	BroadcastChannel = "news"
	// FetchTool GETs http://<upstream>/item?text=<its "text" argument> (one
	// request, through a client that keeps connections alive), decodes the
	// JSON answer {"text": ...} and returns its text as one text block.
	FetchTool = "fetch"
	// UpstreamItem is the upstream server's path FetchTool requests.
	UpstreamItem = "/item"
	// UpstreamEnv is the environment variable that carries the upstream's
	// base URL (http://host:port) to the luamcp server's Lua script.
	UpstreamEnv = "BENCH_UPSTREAM"
	// SpinTool keeps a CPU busy for its "ms" argument (milliseconds of CPU
	// time), then returns the text "spun".
	SpinTool = "spin"
	// Spinners is the number of sessions that call SpinTool at once in the
	// spin scenario, and SpinMillis the length of each call.
	Spinners   = 32
	SpinMillis = 200
	// ToolCount is the number of tools on PathTools.
	ToolCount = 1000
	// PageSize is the page size of tools/list on PathTools.
	PageSize = 50
)

// ToolName is the name of tool i (1-based) on PathTools: tool0001..tool1000.
func ToolName(i int) string { return fmt.Sprintf("tool%04d", i) }

// BuiltTools is the number of tools on PathBuilt100: BuiltToolName(1) to
// BuiltToolName(BuiltTools-1), which echo like EchoTool, then EchoTool.
const BuiltTools = 100

// BuiltToolName is the name of tool i (1-based) on PathBuilt100: tool1..tool99.
func BuiltToolName(i int) string { return fmt.Sprintf("tool%d", i) }

// ReadyPrefix starts the one line a server prints on stdout once it listens;
// the rest of the line is a JSON Ready document.
const ReadyPrefix = "BENCH-READY "

// Ready describes a listening server.
type Ready struct {
	Server string   `json:"server"`
	Addr   string   `json:"addr"`
	Routes []string `json:"routes"`
	// TLSAddr, when set, serves the same routes over HTTPS (HTTP/2) and over
	// HTTP/3 on the same port (UDP), with the certificate CACert (PEM),
	// which clients trust. Only luamcp serves it.
	TLSAddr string `json:"tls_addr,omitempty"`
	CACert  string `json:"ca_cert,omitempty"`
	// Nodes, when set, are the addresses (host:port) of the nodes of a
	// cluster that Addr balances over round-robin; each serves the same
	// routes. Only luamcp-cluster has them.
	Nodes []string `json:"nodes,omitempty"`
}

// Stats is the document PathStats answers. The server releases free memory
// to the OS before it measures, so the figures are live memory.
type Stats struct {
	Goroutines int    `json:"goroutines"`
	HeapAlloc  uint64 `json:"heap_alloc"`
	HeapInuse  uint64 `json:"heap_inuse"`
	Sys        uint64 `json:"sys"`
	// ChurnSessions is the number of live sessions on PathChurn, or -1 when
	// the server cannot tell.
	ChurnSessions int `json:"churn_sessions"`
}
