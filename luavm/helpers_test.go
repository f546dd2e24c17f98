package luavm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/luamcp/luamcp/bridge"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"

	"github.com/luamcp/luamcp/internal/syncbuf"
)

func newLogger() (*slog.Logger, *syncbuf.Buffer) {
	buf := &syncbuf.Buffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// pushes records mcp.notify calls and signals each on notified.
type pushes struct {
	notified chan string
}

func newPushes() *pushes { return &pushes{notified: make(chan string, 16)} }

// everywhere is a Config.Pushes that sends every route's pushes to p.
func everywhere(p bridge.Pushes) func(string) bridge.Pushes {
	return func(string) bridge.Pushes { return p }
}

func (p *pushes) Notify(sessionID, method string, params json.RawMessage) {
	select {
	case p.notified <- method:
	default:
	}
}
func (p *pushes) Broadcast(channel, method string, params json.RawMessage) {}
func (p *pushes) ResourceUpdated(uri string)                               {}
func (p *pushes) Log(sessionID, level string, data json.RawMessage)        {}

// load loads testdata/name; the cleanup closes the script and checks that no
// state is left open.
func load(t testing.TB, name string, edit func(*Config)) (*Script, *syncbuf.Buffer) {
	t.Helper()
	logger, logs := newLogger()
	cfg := Config{Dir: "testdata", Logger: logger, PoolSize: 2, Pushes: everywhere(newPushes())}
	if edit != nil {
		edit(&cfg)
	}
	s, err := Load(filepath.Join("testdata", name), cfg)
	if err != nil {
		t.Fatalf("Load(%s): %v", name, err)
	}
	t.Cleanup(func() {
		s.Close()
		if n := s.LiveStates(); n != 0 {
			t.Errorf("%s: %d Lua states still open after Close", name, n)
		}
	})
	return s, logs
}

// loadSource loads src as the script name in a fresh folder; the cleanup
// closes the script.
func loadSource(t testing.TB, name, src string) (*Script, *syncbuf.Buffer) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	logger, logs := newLogger()
	s, err := Load(filepath.Join(dir, name), Config{Dir: dir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, logs
}

const initParams = `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}`

// open starts a session-mode session (id != "") or a stateless one; the
// cleanup closes it.
func open(t testing.TB, s *Script, id string) (mcp.Session, *mcp.InitResult) {
	t.Helper()
	var params json.RawMessage
	if id != "" {
		params = json.RawMessage(initParams)
	}
	ss, res, err := s.Init(context.Background(), params, id)
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { ss.Close("") })
	return ss, res
}

// out is an mcp.Outbound that drops everything.
type out struct{}

func (out) Progress(json.RawMessage) error    { return nil }
func (out) Log(string, json.RawMessage) error { return nil }
func (out) Request(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, mcp.ErrNoClientCapability
}
func (out) CloseStream() error             { return nil }
func (out) StartTask(mcp.TaskOptions) bool { return false }
func (out) Ask(_ context.Context, reqs []mcp.InputRequest) ([]mcp.InputAnswer, error) {
	return make([]mcp.InputAnswer, len(reqs)), nil
}

func testCall(sessionID string) *mcp.Call {
	return &mcp.Call{SessionID: sessionID, RequestID: json.RawMessage("1"), Out: out{}}
}

// call runs a tool with a 10 s upper bound.
func call(t testing.TB, ss mcp.Session, name, args string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := ss.CallTool(ctx, testCall(""), name, json.RawMessage(args))
	return string(res), err
}

// mustCall runs a tool that must succeed.
func mustCall(t testing.TB, ss mcp.Session, name, args string) string {
	t.Helper()
	res, err := call(t, ss, name, args)
	if err != nil {
		t.Fatalf("%s(%s): %v", name, args, err)
	}
	return res
}

// text returns the text of a single-text-block tool result.
func text(t testing.TB, result string) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal([]byte(result), &r); err != nil || len(r.Content) != 1 {
		t.Fatalf("not a one-block result: %s (%v)", result, err)
	}
	return r.Content[0].Text
}

// isCrash reports whether err is what the transport treats as a crash: not a
// *mcp.Error and not a context error.
func isCrash(err error) bool {
	var merr *mcp.Error
	return err != nil && !errors.As(err, &merr) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(t testing.TB, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("bad JSON %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad wanted JSON %q: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// eventually polls cond for up to 10 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// at returns "file:line:" of the first line of testdata/file containing needle,
// so that expected positions follow edits of the fixtures.
func at(t testing.TB, file, needle string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(src), "\n") {
		if strings.Contains(line, needle) {
			return fmt.Sprintf("%s:%d:", file, i+1)
		}
	}
	t.Fatalf("%s has no line with %q", file, needle)
	return ""
}

func contains(t testing.TB, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%q does not contain %q", s, sub)
	}
}

// checkOutcome checks a tool call's outcome: a crash containing crash when it is
// not "", else the result want. It reports whether the call returned a
// result.
func checkOutcome(t *testing.T, got string, err error, want, crash string) bool {
	t.Helper()
	if crash != "" {
		if !isCrash(err) {
			t.Fatalf("want a crash, got %q, %v", got, err)
		}
		contains(t, err.Error(), crash)
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, got, want)
	return true
}
