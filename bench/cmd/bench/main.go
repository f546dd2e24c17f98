// Command bench measures luamcp against the official Go SDK, mcp-go and a
// bare net/http floor, every server with the same tools, in the same run,
// with reply checks on every answer.
//
//	cd bench && go run ./cmd/bench          # the full table (several minutes)
//	cd bench && go run ./cmd/bench -smoke   # every scenario, tiny, in seconds
//
// Each server is its own process built from bench/cmd/<name>. Where it can,
// the harness pins the servers to one CPU and itself to another (taskset),
// so a server gets one core and the generator never competes with it.
package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/luamcp/luamcp/bench/internal/report"
	"github.com/luamcp/luamcp/bench/internal/scenario"
	"github.com/luamcp/luamcp/bench/internal/upstream"
)

type config struct {
	smoke      bool
	servers    string
	only       string
	levels     string
	scale      scenario.Scale
	pin        bool
	serverCPU  int
	genCPU     int
	jsonOut    string
	binDir     string
	parallel   bool
	cpuProfile string
	hold       bool
	repeat     int
	scripts    string
	// serversSet: -servers was given (else cluster-only runs start only
	// luamcp-cluster).
	serversSet bool
}

const pinnedEnv = "LUAMCP_BENCH_PINNED"

func main() {
	var c config
	fs := flag.CommandLine
	fs.BoolVar(&c.smoke, "smoke", false, "every scenario at a tiny scale, servers in parallel, no pinning: a correctness check")
	fs.StringVar(&c.servers, "servers", "bare,luamcp,luamcp-go,go-sdk,mcp-go", "servers to run, comma-separated")
	fs.StringVar(&c.only, "only", "", "run only scenarios whose name contains one of these comma-separated words (the cluster ones run only when named: -only cluster)")
	fs.StringVar(&c.levels, "levels", "1,16,64", "concurrency levels of the session and stateless calls")
	fs.IntVar(&c.scale.Conc, "conc", 16, "concurrency of churn, tools/list, progress and setup")
	fs.DurationVar(&c.scale.Warmup, "warmup", time.Second, "unmeasured warm-up of every timed run")
	fs.DurationVar(&c.scale.Duration, "duration", 5*time.Second, "measured window of every timed run")
	fs.IntVar(&c.scale.Abandon, "abandon", 10000, "sessions opened and abandoned")
	fs.IntVar(&c.scale.Idle, "idle", 0, "sessions of the idle scenario, abandon at full scale (0: not run; 200000 with -only idle -ttl 5m)")
	fs.DurationVar(&c.scale.IdleWait, "idle-wait", 2*time.Second, "how long abandoned sessions sit idle before their memory is read (luamcp's churn route hibernates after 1 s)")
	fs.DurationVar(&c.scale.TTL, "ttl", 30*time.Second, "idle session TTL of the churn route (must exceed the time to open -abandon sessions)")
	fs.IntVar(&c.scale.Listeners, "listeners", 1000, "sessions with an open GET stream in the broadcast")
	fs.IntVar(&c.scale.Rounds, "rounds", 5, "measured broadcasts")
	fs.DurationVar(&c.scale.Timeout, "timeout", 10*time.Second, "bound on every HTTP exchange")
	fs.BoolVar(&c.pin, "pin", true, "pin servers and generator to different CPUs with taskset (when there are two CPUs and taskset)")
	fs.IntVar(&c.serverCPU, "server-cpu", 0, "CPU the servers are pinned to")
	fs.IntVar(&c.genCPU, "gen-cpu", 1, "CPU the generator is pinned to")
	fs.StringVar(&c.jsonOut, "json", "", "also write every result to this JSON file")
	fs.StringVar(&c.binDir, "bin", "", "where server binaries and logs go (default <bench>/bin)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write the generator's CPU profile to this file")
	fs.StringVar(&c.scripts, "scripts", "", "the Lua scripts luamcp serves (default <bench>/scripts)")
	fs.IntVar(&c.repeat, "repeat", 1, "run the scenarios this many times (later rounds are marked #2, #3, ...)")
	fs.BoolVar(&c.hold, "hold", false, "after the run, keep the servers up (for /debug/pprof) until interrupted")
	fs.Parse(os.Args[1:])
	fs.Visit(func(f *flag.Flag) { c.serversSet = c.serversSet || f.Name == "servers" })

	if c.smoke {
		c.smokeScale()
	}
	if err := run(&c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// smokeScale shrinks every scenario to a correctness check of a few seconds;
// flags given explicitly still win.
func (c *config) smokeScale() {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	def := func(name string, apply func()) {
		if !set[name] {
			apply()
		}
	}
	def("levels", func() { c.levels = "1,4" })
	def("conc", func() { c.scale.Conc = 4 })
	def("warmup", func() { c.scale.Warmup = 0 })
	def("duration", func() { c.scale.Duration = 200 * time.Millisecond })
	def("abandon", func() { c.scale.Abandon = 100 })
	def("idle-wait", func() { c.scale.IdleWait = 300 * time.Millisecond })
	def("ttl", func() { c.scale.TTL = time.Second })
	def("listeners", func() { c.scale.Listeners = 20 })
	def("rounds", func() { c.scale.Rounds = 2 })
	def("pin", func() { c.pin = false })
	c.parallel = true
}

func run(c *config) error {
	for _, f := range strings.Split(c.levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("bad -levels %q", c.levels)
		}
		c.scale.Levels = append(c.scale.Levels, n)
	}
	if c.pin {
		if err := pinSelf(c); err != nil {
			fmt.Fprintln(os.Stderr, "bench: not pinning:", err)
			c.pin = false
		}
	}
	benchDir, err := findBenchDir()
	if err != nil {
		return err
	}
	if c.binDir == "" {
		c.binDir = filepath.Join(benchDir, "bin")
	}
	if c.scripts == "" {
		c.scripts = filepath.Join(benchDir, "scripts")
	}
	if c.scripts, err = filepath.Abs(c.scripts); err != nil {
		return err
	}
	if err := os.MkdirAll(c.binDir, 0o755); err != nil {
		return err
	}
	defs, err := selectServers(c.serverList())
	if err != nil {
		return err
	}

	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	serverCPU := -1
	if c.pin {
		serverCPU = c.serverCPU
	}
	fmt.Printf("luamcp bench: %s, %s CPUs, servers %s, generator %s, generator GOMAXPROCS %d\n",
		runtime.Version(), machineCPUs(), cpuText(serverCPU), cpuText(genCPU(c)), runtime.GOMAXPROCS(0))
	fmt.Printf("scale: levels %v, conc %d, warm-up %v, window %v, abandon %d (idle %v, TTL %v), idle %d, listeners %d x %d rounds\n\n",
		c.scale.Levels, c.scale.Conc, c.scale.Warmup, c.scale.Duration, c.scale.Abandon, c.scale.IdleWait, c.scale.TTL, c.scale.Idle, c.scale.Listeners, c.scale.Rounds)

	// The HTTP API the fetch tools call runs in the harness (on the
	// generator's CPU when pinned): the same for every server.
	up, err := upstream.Start()
	if err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	defer up.Close()

	var (
		procs   []*process
		targets []*scenario.Target
		broken  []error
	)
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	bins := make([]string, len(defs))
	buildErrs := make([]error, len(defs))
	var wg sync.WaitGroup
	for i, d := range defs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bins[i], buildErrs[i] = build(ctx, benchDir, c.binDir, d)
		}()
	}
	wg.Wait()
	for i, d := range defs {
		bin, err := bins[i], buildErrs[i]
		if err != nil {
			broken = append(broken, err)
			continue
		}
		args := []string{"-ttl", c.scale.TTL.String(), "-upstream", up.Addr}
		if d.Args != nil {
			args = append(args, d.Args(c.scripts)...)
		}
		p, err := start(d, bin, args, serverCPU, filepath.Join(c.binDir, d.Name+".log"))
		if err != nil {
			broken = append(broken, err)
			continue
		}
		procs = append(procs, p)
		routes := map[string]bool{}
		for _, r := range p.ready.Routes {
			routes[r] = true
		}
		t := &scenario.Target{Name: d.Name, Addr: p.ready.Addr, PID: p.pid(), Routes: routes, Strict: d.Strict, Nodes: p.ready.Nodes}
		if p.ready.TLSAddr != "" {
			t.TLSAddr, t.CA = p.ready.TLSAddr, x509.NewCertPool()
			if !t.CA.AppendCertsFromPEM([]byte(p.ready.CACert)) {
				broken = append(broken, fmt.Errorf("%s: its ready line has no usable ca_cert", d.Name))
				t.TLSAddr = ""
			}
		}
		targets = append(targets, t)
		fmt.Fprintf(os.Stderr, "started %-10s pid %d, http://%s (profiles: /debug/pprof/)\n", d.Name, p.pid(), p.ready.Addr)
	}
	for _, err := range broken {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
	}

	var (
		results []*scenario.Result
		names   []string
	)
	for rep := 1; rep <= c.repeat; rep++ {
		for _, sc := range scenario.All(c.scale) {
			if !c.wants(sc) || ctx.Err() != nil {
				continue
			}
			if rep > 1 {
				sc.Name += fmt.Sprintf(" #%d", rep)
			}
			names = append(names, sc.Name)
			results = append(results, runScenario(ctx, c, sc, targets, procs)...)
		}
	}
	fmt.Println()
	report.Print(os.Stdout, names, results)
	if c.hold {
		for _, t := range targets {
			fmt.Printf("holding %-10s http://%s (pid %d): /debug/pprof/, /debug/stats\n", t.Name, t.Addr, t.PID)
		}
		<-ctx.Done()
		return nil
	}

	if c.jsonOut != "" {
		b, err := json.MarshalIndent(results, "", "  ")
		if err == nil {
			err = os.WriteFile(c.jsonOut, b, 0o644)
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", c.jsonOut, err)
		}
	}
	failed := 0
	for _, r := range results {
		if r.Fatal() {
			failed++
		}
	}
	switch {
	case ctx.Err() != nil:
		return errors.New("interrupted")
	case len(broken) > 0:
		return fmt.Errorf("%d servers could not run", len(broken))
	case failed > 0:
		return fmt.Errorf("%d results failed their checks", failed)
	}
	return nil
}

// runScenario runs sc on every target: one after another, or all at once in
// smoke mode (where timings do not matter).
func runScenario(ctx context.Context, c *config, sc scenario.Scenario, targets []*scenario.Target, procs []*process) []*scenario.Result {
	out := make([]*scenario.Result, len(targets))
	one := func(i int) {
		t := targets[i]
		r := sc.RunOn(ctx, t, c.scale)
		if !procs[i].alive() {
			r.Errors++
			r.Failures = append(r.Failures, "the server process died (see its log in "+c.binDir+")")
		}
		markKnown(r)
		out[i] = r
		fmt.Fprintf(os.Stderr, "%-22s %-10s %s\n", sc.Name, t.Name, line(r))
	}
	if !c.parallel {
		for i := range targets {
			one(i)
		}
		return out
	}
	var wg sync.WaitGroup
	for i := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one(i)
		}()
	}
	wg.Wait()
	return out
}

// line is a one-line progress report of a result.
func line(r *scenario.Result) string {
	switch {
	case r.NA:
		return "n/a"
	case r.Fatal():
		return fmt.Sprintf("FAIL: %d errors; %s", r.Errors, strings.Join(r.Failures, "; "))
	case r.Failed():
		return fmt.Sprintf("known defect: %d errors", r.Errors)
	case len(r.Metrics) == 0:
		return "ok"
	}
	return report.Header(r.Metrics[0]) + " " + report.Value(r.Metrics[0]) + " ok"
}

func (c *config) selected(name string) bool {
	if c.only == "" {
		return true
	}
	for _, w := range strings.Split(c.only, ",") {
		if w = strings.TrimSpace(w); w != "" && strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// wants reports whether sc runs. The cluster scenarios start a cluster of
// their own and are not part of the default run: -only must name them
// (-only cluster).
func (c *config) wants(sc scenario.Scenario) bool {
	if sc.Cluster && c.only == "" {
		return false
	}
	return c.selected(sc.Name)
}

// serverList is -servers, with luamcp-cluster added when a cluster
// scenario runs; when only cluster scenarios run and -servers was not
// given, luamcp-cluster alone (the others would all be n/a).
func (c *config) serverList() string {
	var cluster, single bool
	for _, sc := range scenario.All(c.scale) {
		if c.wants(sc) {
			cluster = cluster || sc.Cluster
			single = single || !sc.Cluster
		}
	}
	switch {
	case !cluster:
		return c.servers
	case !single && !c.serversSet:
		return clusterServer
	case slices.Contains(strings.Split(strings.ReplaceAll(c.servers, " ", ""), ","), clusterServer):
		return c.servers
	}
	return c.servers + "," + clusterServer
}

func selectServers(list string) ([]serverDef, error) {
	var out []serverDef
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(servers, func(d serverDef) bool { return d.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("unknown server %q", name)
		}
		out = append(out, servers[i])
	}
	return out, nil
}

// findBenchDir finds the bench module from the working directory (bench/ or
// the repository root).
func findBenchDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for _, d := range []string{wd, filepath.Join(wd, "bench")} {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/luamcp/luamcp/bench\n") {
			return d, nil
		}
	}
	return "", errors.New("run from the bench module (bench/) or the repository root")
}

func cpuText(cpu int) string {
	if cpu < 0 {
		return "unpinned"
	}
	return "on CPU " + strconv.Itoa(cpu)
}

func genCPU(c *config) int {
	if !c.pin {
		return -1
	}
	return c.genCPU
}

// pinSelf re-executes the harness under taskset on the generator CPU, once.
// The Go runtime then sizes GOMAXPROCS to that one CPU.
func pinSelf(c *config) error {
	if os.Getenv(pinnedEnv) != "" {
		return nil
	}
	if runtime.NumCPU() < 2 {
		return errors.New("fewer than two CPUs")
	}
	if c.serverCPU == c.genCPU {
		return errors.New("-server-cpu and -gen-cpu are the same")
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	argv := append([]string{"taskset", "-c", strconv.Itoa(c.genCPU), self}, os.Args[1:]...)
	return syscall.Exec(taskset, argv, append(os.Environ(), pinnedEnv+"="+strconv.Itoa(runtime.NumCPU())))
}

// machineCPUs is the number of CPUs of the machine: once pinned, the
// runtime only sees its own.
func machineCPUs() string {
	if n := os.Getenv(pinnedEnv); n != "" {
		return n
	}
	return strconv.Itoa(runtime.NumCPU())
}
