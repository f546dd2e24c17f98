# luamcp: `make test` runs every test; `make serve` serves the bundled scripts.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

GO       ?= go
FUZZTIME ?= 10s

.PHONY: build serve test check cross tools

build: tools
	$(GO) build -o luamcp .

serve: tools
	$(GO) run . serve

# The whole suite, as CI runs it: the node clients and the conformance suite
# (npm ci also brings node 22), vet, unit tests with the race detector (the
# patched gopher-lua's own suite too), each
# fuzz target for $(FUZZTIME), the end-to-end module, then the benchmark
# harness's tests and smoke run. Fuzzing takes one
# package and one target per run: .ci/fuzz.sh lists the targets and loops.
test: tools
	@.ci/tools.sh
	cd tests/node && npm ci --no-audit --no-fund
	$(GO) vet ./...
	cd tests && $(GO) vet ./...
	$(MAKE) --no-print-directory cross
	$(GO) test -race -count=1 ./...
	@# The patched interpreter's own suite (a nested module, so not under
	@# ./...): upstream's tests and ours for each patch in its PATCHES.md.
	cd third_party/gopher-lua && $(GO) test -race -count=1 -timeout 15m .
	GO=$(GO) .ci/fuzz.sh $(FUZZTIME)
	cd tests && $(GO) test -race -count=1 -timeout 30m -skip '^TestConformance$$' ./...
	@# The hostile suites again without the race detector, whose shadow memory
	@# hides whether RSS came back after an attack: here RSS is judged.
	cd tests && $(GO) test -count=1 -timeout 10m -run '^TestHostile' -v . > hostile.log 2>&1 \
	  || { cat hostile.log; exit 1; }
	grep -E -- '^(--- |ok)|hostile_.*(healthy route|failed after|RSS)' tests/hostile.log
	@# The conformance suites run on their own so that their summaries reach the
	@# log: every scenario's line and the totals; the whole output on a failure.
	cd tests && $(GO) test -race -count=1 -timeout 10m -run '^TestConformance$$' -v . > conformance.log 2>&1 \
	  || { cat conformance.log; exit 1; }
	grep -E -- '^ok |--- (PASS|FAIL)|conformance .*\(exit|SUMMARY|[✓✗] |Total:|Not scored' tests/conformance.log
	@# The benchmark harness: its own tests (its module is not under ./...),
	@# then a tiny scale run: every scenario on every server, every reply
	@# checked, no timing judged; then the cluster scenarios (opt-in).
	cd bench && $(GO) vet ./... && $(GO) test -race -count=1 ./...
	cd bench && $(GO) run ./cmd/bench -smoke
	cd bench && $(GO) run ./cmd/bench -smoke -only cluster

# Formatting and vet, without running tests.
check: tools
	@unformatted="$$(gofmt -l . )"; if [ -n "$$unformatted" ]; then echo "gofmt needed on:" >&2; echo "$$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	cd tests && $(GO) vet ./...

# The product and its tests compile, and pass vet, for the other platforms
# users run: Windows (run under Wine by TestWindows), macOS, 32-bit Linux.
CROSS ?= windows/amd64 darwin/arm64 linux/386
cross: tools
	for p in $(CROSS); do echo "vet $$p"; GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...; done

tools:
	@command -v $(GO) >/dev/null || { echo "make: $(GO) not found. Install Go 1.26 or newer (https://go.dev/dl/) and put it on PATH." >&2; exit 1; }
