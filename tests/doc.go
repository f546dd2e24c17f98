// Package tests holds luamcp's end-to-end tests. Every test starts real
// servers with host.New on 127.0.0.1 and talks to them over HTTP: with the
// official Go SDK client, with the official TypeScript SDK client (node
// scripts under node/, run with the node 22 binary that `npm ci` installs
// there), with a raw net/http client for what the SDKs hide, and with the
// official conformance suite.
//
// Run everything with `make test` at the repository root, or, once
// `npm ci` has run in tests/node:
//
//	cd tests && go test -race ./...
//
// The fixture servers live in testdata/servers: lib/fixture.lua is a port of
// the original implementation's test server, and each file beside it mounts
// that fixture under different route options (one variant per limit a test
// needs). testdata/hostlib holds the scripts that reach the world (the host
// library: http, fs, env, exec); hostlib_test.go serves them a fake API on
// 127.0.0.1 and a temporary folder.
//
// The 2026-07-28 era (stateless, per request, beside the 2025 sessions on
// the same URLs) has its own files: era_go_test.go (the Go SDK client in its
// default mode), era_ts_test.go with node/era.mjs (the TypeScript client v2,
// @modelcontextprotocol/client, pinned and in auto mode) and era_raw_test.go
// (the wire). Their harnesses are proven on a peer that speaks the era, the
// Go SDK's server with Stateless: true, in era_proof_test.go, which only
// builds with a tag:
//
//	go test -tags eraproof -race -run TestEraProof .
//
// soak/ is no test but a command: a chaos soak of a real `luamcp serve`
// built with the race detector, for the races, panics, deadlocks and leaks
// that only many minutes of mixed traffic, hot reloads and a restart bring
// out, more than CI can afford. Run it by hand (see its doc comment):
//
//	go build -race -o /tmp/luamcp-race . && cd tests && nice -n 10 go run ./soak -bin /tmp/luamcp-race
package tests
