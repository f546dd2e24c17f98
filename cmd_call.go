package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/luamcp/luamcp/bridge"
	"github.com/luamcp/luamcp/luavm"
	"github.com/luamcp/luamcp/mcp"
)

func callCommand() *cli.Command {
	return &cli.Command{
		Name:      "call",
		Usage:     "run init, then one tool of a script, in-process, and print the result",
		ArgsUsage: "FILE TOOL [JSON arguments]",
		Before:    flagsFirst,
		Action:    callTool,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "the scripts folder modules are required from (default: FILE's folder)"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
			envFileFlag(),
		},
	}
}

// callSessionID is the session id a session-mode script sees under `call`.
const callSessionID = "luamcp-call"

// callTool loads FILE, runs init and TOOL with the JSON arguments, prints
// progress, logs and pushes to stderr as they happen and the result to
// stdout. It fails when the tool crashes or returns an error result.
func callTool(c *cli.Context) error {
	switch {
	case c.NArg() < 2:
		return fmt.Errorf("usage: luamcp call [--dir DIR] [--env-file FILE] [--log-level info] FILE TOOL [JSON arguments]")
	case c.NArg() > 3:
		// The shell split an unquoted JSON object (or the arguments were given one by one).
		return fmt.Errorf("call takes FILE, TOOL and the arguments as one JSON object, not %d arguments: quote the JSON ('{\"name\": \"Ada\"}')", c.NArg())
	}
	file, tool := c.Args().Get(0), c.Args().Get(1)
	args := json.RawMessage(`{}`)
	if c.NArg() == 3 {
		args = json.RawMessage(c.Args().Get(2))
		var obj map[string]any
		if err := json.Unmarshal(args, &obj); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) {
				return fmt.Errorf("arguments must be a JSON object, not a JSON %s: %s", typeErr.Value, c.Args().Get(2))
			}
			return fmt.Errorf("arguments must be a JSON object: %w", err)
		}
	}
	logger, err := newLogger(c.String("log-level"), "text", c.App.ErrWriter)
	if err != nil {
		return err
	}
	if err := loadEnvFile(c.String("env-file")); err != nil {
		return err
	}
	dir := c.String("dir")
	if dir == "" {
		dir = filepath.Dir(file)
	}
	out := &callPrinter{w: c.App.ErrWriter}
	s, err := luavm.Load(file, luavm.Config{Dir: dir, Logger: logger, Pushes: func(string) bridge.Pushes { return callPushes{out} }, PoolSize: -1})
	if err != nil {
		return err
	}
	defer s.Close()

	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var params json.RawMessage
	sid := ""
	if s.Options().Sessions {
		sid = callSessionID
		params = json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"luamcp call","version":"` + version + `"}}`)
	}
	sess, _, err := s.Init(ctx, params, sid)
	if err != nil {
		return fmt.Errorf("init failed: %w", err)
	}
	reason := ""
	if sid != "" {
		reason = "normal"
	}
	defer sess.Close(reason)

	call := &mcp.Call{SessionID: sid, RequestID: json.RawMessage(`1`), ProgressToken: json.RawMessage(`"call"`), Out: out}
	res, err := sess.CallTool(ctx, call, tool, args)
	var merr *mcp.Error
	switch {
	case errors.As(err, &merr) && merr.Code == mcp.ErrUnknownTool(tool).Code && strings.Contains(merr.Message, tool):
		return fmt.Errorf("%s has no tool %q (tools: %s)", file, tool, strings.Join(toolNames(ctx, sess), ", "))
	case err != nil:
		return fmt.Errorf("%s crashed: %w", tool, err)
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, res, "", "  ") != nil {
		pretty.Write(res)
	}
	fmt.Fprintln(c.App.Writer, pretty.String())
	var result struct {
		IsError bool `json:"isError"`
	}
	if json.Unmarshal(res, &result) == nil && result.IsError {
		return fmt.Errorf("%s returned an error result", tool)
	}
	return nil
}

func toolNames(ctx context.Context, sess mcp.Session) []string {
	items, err := sess.Tools(ctx)
	if err != nil {
		return nil
	}
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.Key
	}
	return names
}

// callPrinter is the call's line back to a client that is a terminal: it
// prints progress, logs and pushes, one line each, as they happen. The
// script's requests to the client (elicitation, sampling, roots) fail as
// they do for a client without the capability.
type callPrinter struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *callPrinter) line(kind string, v ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, append([]any{kind}, v...)...)
}

func (p *callPrinter) Progress(params json.RawMessage) error {
	p.line("progress", string(params))
	return nil
}

func (p *callPrinter) Log(level string, data json.RawMessage) error {
	p.line("log", level, string(data))
	return nil
}

func (p *callPrinter) Request(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	p.line("request", method, "(luamcp call answers no requests)")
	return nil, mcp.ErrNoClientCapability
}

func (p *callPrinter) Ask(_ context.Context, reqs []mcp.InputRequest) ([]mcp.InputAnswer, error) {
	out := make([]mcp.InputAnswer, len(reqs))
	for i, r := range reqs {
		p.line("request", r.Method, "(luamcp call answers no requests)")
		out[i].Err = mcp.ErrNoClientCapability
	}
	return out, nil
}

func (p *callPrinter) CloseStream() error { return nil }

// StartTask runs the call to its end: luamcp call has no tasks to poll.
func (p *callPrinter) StartTask(mcp.TaskOptions) bool { return false }

// callPushes prints the script's pushes (bridge.Pushes): they would go to
// GET channels.
type callPushes struct{ p *callPrinter }

func (c callPushes) Notify(sessionID, method string, params json.RawMessage) {
	c.p.line("notify", sessionID, method, string(params))
}

func (c callPushes) Broadcast(channel, method string, params json.RawMessage) {
	c.p.line("broadcast", channel, method, string(params))
}

func (c callPushes) ResourceUpdated(uri string) { c.p.line("resource_updated", uri) }

func (c callPushes) Log(sessionID, level string, data json.RawMessage) {
	c.p.line("log", sessionID, level, string(data))
}
