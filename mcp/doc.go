// Package mcp is luamcp's transport: the Model Context Protocol over
// Streamable HTTP (JSON-RPC 2.0 on POST, server pushes on GET, DELETE to end
// a session), for protocol versions 2025-11-25, 2025-06-18 and 2025-03-26,
// and 2026-07-28 (stateless, per request, beside them: era.go).
//
// A route is a Handler serving one Server (see behaviour.go, the seam). The
// transport owns everything that is not the server's business: the gates
// (loopback peer and Host, Origin, auth), JSON-RPC decoding and the envelopes,
// version negotiation, capability gating, pagination, sessions (a FIFO queue
// and one worker each, timeouts, cancellation, idle expiry, concurrent tools
// on snapshots), SSE with replay and resumption, deadlines on every read of a
// body and every write to a client, requests to the client and the Hub that
// caps sessions and routes server pushes. It imports only the standard library and
// knows nothing of Lua.
//
// Files, one concept each: handler.go (HTTP verbs and gates), jsonrpc.go
// (decoding and envelopes), dispatch.go (method to Session call), session.go
// (a session's state machine), registry.go (the sessions of a route),
// stream.go (SSE, replay, a call's reply), budget.go (the bound on what every
// replay buffer keeps together), bodies.go (the bound on what the POST
// bodies being read hold together), pubsub.go (the Hub and channels),
// outbound.go (a call's line to the client), observe.go (what an Observer is
// told, for metrics), suspend.go (sessions saved for a later process),
// uritemplate.go and loglevel.go.
package mcp
