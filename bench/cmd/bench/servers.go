package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/luamcp/luamcp/bench/internal/spec"
)

// serverDef is one implementation under test, built from bench/cmd/<dir>.
type serverDef struct {
	Name string
	Dir  string
	// Strict: our code, where a leak is a failure.
	Strict bool
	// Args are extra flags, given the Lua scripts folder.
	Args func(scripts string) []string
}

var servers = []serverDef{
	{Name: "bare", Dir: "bare", Strict: true},
	{Name: "luamcp", Dir: "luamcp", Strict: true, Args: func(scripts string) []string {
		return []string{"-scripts", scripts}
	}},
	{Name: "luamcp-go", Dir: "luamcp-go", Strict: true},
	{Name: "go-sdk", Dir: "gosdk"},
	{Name: "mcp-go", Dir: "mcpgo"},
	// Three luamcp nodes joined by NATS behind a round-robin proxy, for the
	// cluster scenarios only; started when one of them is selected.
	{Name: clusterServer, Dir: "luamcp-cluster", Strict: true, Args: func(scripts string) []string {
		return []string{"-scripts", scripts}
	}},
}

// clusterServer is the server the cluster scenarios run on.
const clusterServer = "luamcp-cluster"

// build compiles the server's binary into binDir.
func build(ctx context.Context, benchDir, binDir string, s serverDef) (string, error) {
	bin := filepath.Join(binDir, s.Name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/"+s.Dir)
	cmd.Dir = benchDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", s.Name, err, firstLines(out, 12))
	}
	return bin, nil
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(bytes.TrimSpace(b)), "\n", n+1)
	if len(lines) > n {
		lines[n] = "..."
	}
	return strings.Join(lines, "\n")
}

// process is a running server.
type process struct {
	def   serverDef
	cmd   *exec.Cmd
	ready spec.Ready
	log   *os.File
	exit  chan struct{} // closed when the process has exited
}

// start runs bin, pinned to cpu when cpu >= 0, and waits for its ready line.
func start(def serverDef, bin string, args []string, cpu int, logPath string) (*process, error) {
	argv := append([]string{bin}, args...)
	if cpu >= 0 {
		argv = append([]string{"taskset", "-c", fmt.Sprint(cpu)}, argv...)
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = logf
	// The server dies with the harness, however the harness ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", def.Name, err)
	}
	p := &process{def: def, cmd: cmd, log: logf, exit: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.exit)
	}()

	readyc := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, spec.ReadyPrefix); ok {
				readyc <- json.Unmarshal([]byte(rest), &p.ready)
				io.Copy(logf, stdout)
				return
			}
			fmt.Fprintln(logf, line)
		}
		readyc <- errors.New("exited before it was ready")
	}()
	select {
	case err = <-readyc:
	case <-time.After(30 * time.Second):
		err = errors.New("not ready after 30s")
	}
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("%s: %w (log: %s)", def.Name, err, logPath)
	}
	return p, nil
}

// alive reports whether the process still runs.
func (p *process) alive() bool {
	select {
	case <-p.exit:
		return false
	default:
		return true
	}
}

// stop asks the server to stop, then kills it if it lingers.
func (p *process) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exit:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.exit
	}
	p.log.Close()
}

// pid is the server's own pid (taskset execs it, so it is the same).
func (p *process) pid() int { return p.cmd.Process.Pid }
