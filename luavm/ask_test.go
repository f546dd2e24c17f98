package luavm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/mcp"
)

// eraLine is an mcp.Outbound like the transport's in the 2026-07-28 era: it
// answers a round from the recorded answers by key, and ends the call when
// one is missing, cancelling the call's context with mcp.ErrInputRequired
// first (or with fail, the way -32021 ends it).
type eraLine struct {
	out
	stop    context.CancelCauseFunc
	answers map[string]string
	fail    *mcp.Error
	keys    []string // every key asked, in order
}

func (l *eraLine) Ask(_ context.Context, reqs []mcp.InputRequest) ([]mcp.InputAnswer, error) {
	res := make([]mcp.InputAnswer, len(reqs))
	missing := 0
	for i, r := range reqs {
		l.keys = append(l.keys, r.Key)
		a, ok := l.answers[r.Key]
		if !ok {
			missing++
			continue
		}
		res[i].Result = json.RawMessage(a)
	}
	if l.fail != nil {
		l.stop(l.fail)
		return nil, l.fail
	}
	if missing > 0 {
		l.stop(mcp.ErrInputRequired)
		return nil, fmt.Errorf("%d unanswered: %w", missing, mcp.ErrInputRequired)
	}
	return res, nil
}

// eraCall runs one 2026-07-28 request of tool on a fresh stateless session,
// with the answers given so far.
func eraCall(t *testing.T, s *Script, tool string, line *eraLine) (string, error) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ctx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	line.stop = cancel
	ss, _ := open(t, s, "")
	call := &mcp.Call{RequestID: json.RawMessage("1"), ProtocolVersion: "2026-07-28",
		ClientCapabilities: json.RawMessage(`{"elicitation":{}}`), Out: line}
	res, err := ss.CallTool(ctx, call, tool, json.RawMessage(`{}`))
	return string(res), err
}

// The 2026-07-28 era: each run stops at the first unanswered request, which
// is no crash; the retry re-runs the callback, which gets the recorded
// answers in order until the next question.
func TestInputRequiredRounds(t *testing.T) {
	s, logs := load(t, "ask.lua", nil)
	line := &eraLine{answers: map[string]string{}}

	_, err := eraCall(t, s, "greet", line)
	if !errors.Is(err, mcp.ErrInputRequired) {
		t.Fatalf("round 1: %v, want ErrInputRequired", err)
	}
	var stop *stopError
	if !errors.As(err, &stop) || stop.callback != "handle_tool" {
		t.Errorf("round 1: %#v, want a stopError of handle_tool", err)
	}
	line.answers["user_name"] = `{"action":"accept","content":{"name":"Ada"}}`
	if _, err := eraCall(t, s, "greet", line); !errors.Is(err, mcp.ErrInputRequired) {
		t.Fatalf("round 2: %v, want ErrInputRequired", err)
	}
	line.answers["elicit-1"] = `{"action":"accept","content":{"color":"blue"}}`
	res, err := eraCall(t, s, "greet", line)
	if err != nil {
		t.Fatalf("round 3: %v", err)
	}
	if got := text(t, res); got != "Hello Ada (blue)" {
		t.Errorf("round 3: %q", got)
	}
	if want := []string{"user_name", "user_name", "elicit-1", "user_name", "elicit-1"}; !slices.Equal(line.keys, want) {
		t.Errorf("keys asked %q, want %q", line.keys, want)
	}
	if out := logs.String(); strings.Contains(out, "Lua callback failed") || strings.Contains(out, "level=ERROR") {
		t.Errorf("a run stopped for input was logged as a failure:\n%s", out)
	}
	contains(t, logs.String(), "Lua call stopped by the transport")
}

// mcp.ask is one round: every key is asked at once, in the order of the keys.
func TestInputRequiredAsk(t *testing.T) {
	s, _ := load(t, "ask.lua", nil)
	line := &eraLine{answers: map[string]string{"user_name": `{"action":"accept","content":{"name":"Ada"}}`}}
	if _, err := eraCall(t, s, "many", line); !errors.Is(err, mcp.ErrInputRequired) {
		t.Fatalf("round 1: %v, want ErrInputRequired", err)
	}
	line.answers["client_roots"] = `{"roots":[{"uri":"file:///w"}]}`
	res, err := eraCall(t, s, "many", line)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "Ada file:///w nil" {
		t.Errorf("got %q", got)
	}
	if want := []string{"client_roots", "user_name", "client_roots", "user_name"}; !slices.Equal(line.keys, want) {
		t.Errorf("keys asked %q, want %q", line.keys, want)
	}
}

// A stop goes through pcall, and a session's state is rolled back as after
// an interruption: what the stopped run did is undone.
func TestInputRequiredStopsPcallAndRollsBack(t *testing.T) {
	s, logs := load(t, "ask.lua", nil)
	ss, _ := open(t, s, "sid")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	line := &eraLine{stop: cancel}
	_, err := ss.CallTool(ctx, &mcp.Call{SessionID: "sid", RequestID: json.RawMessage("1"), Out: line}, "trapped", json.RawMessage(`{}`))
	if !errors.Is(err, mcp.ErrInputRequired) {
		t.Fatalf("trapped: %v, want ErrInputRequired", err)
	}
	if got := text(t, mustCall(t, ss, "runs", `{}`)); got != "0" {
		t.Errorf("runs = %s after a stopped call, want 0 (rolled back)", got)
	}
	if strings.Contains(logs.String(), "Lua callback failed") {
		t.Errorf("logged as a crash:\n%s", logs)
	}
}

// The transport ends a call with an *mcp.Error (-32021 for a capability the
// client lacks): the session returns it, as a stop, not as the script's
// in-band answer.
func TestMissingCapabilityStops(t *testing.T) {
	s, logs := load(t, "ask.lua", nil)
	missing := &mcp.Error{Code: -32021, Message: "Missing required client capability", Data: json.RawMessage(`{"requiredCapabilities":{"elicitation":{}}}`)}
	_, err := eraCall(t, s, "greet", &eraLine{fail: missing})
	var merr *mcp.Error
	if !errors.As(err, &merr) || merr != missing {
		t.Fatalf("err = %v, want the transport's -32021", err)
	}
	if inBand(err) {
		t.Error("a stop is taken for the script's in-band answer")
	}
	if strings.Contains(logs.String(), "Lua callback failed") {
		t.Errorf("logged as a crash:\n%s", logs)
	}
}

// The 2025 era: requests travel on the call's stream and a request that
// fails alone is the script's in-band failure, as before.
func TestAskSessionEra(t *testing.T) {
	s, _ := load(t, "ask.lua", nil)
	ss, _ := open(t, s, "sid")
	line := &sessionLine{answers: map[string]string{
		"elicitation/create": `{"action":"accept","content":{"name":"Ada","color":"red"}}`,
	}}
	call := &mcp.Call{SessionID: "sid", RequestID: json.RawMessage("1"), ProtocolVersion: "2025-11-25", Out: line}
	res, err := ss.CallTool(context.Background(), call, "greet", json.RawMessage(`{}`))
	if err != nil || text(t, string(res)) != "Hello Ada (red)" {
		t.Fatalf("greet: %s, %v", res, err)
	}
	if want := []string{"user_name", "elicit-1"}; !slices.Equal(line.keys, want) {
		t.Errorf("keys %q, want %q", line.keys, want)
	}
	// No elicitation capability: in-band, the callback decides.
	line.answers = nil
	res, err = ss.CallTool(context.Background(), call, "greet", json.RawMessage(`{}`))
	if err != nil {
		t.Fatalf("greet without the capability: %v", err)
	}
	jsonEqual(t, string(res), `{"content":[{"type":"text","text":"elicitation/create: `+mcp.ErrNoClientCapability.Error()+`"}],"isError":true}`)
	if got := text(t, mustCall(t, ss, "runs", `{}`)); got != "2" {
		t.Errorf("runs = %s, want 2 (in-band failures keep their state)", got)
	}
}

// sessionLine answers like a 2025-era stream: per request, by method;
// a method it has no answer for lacks the client capability.
type sessionLine struct {
	out
	answers map[string]string
	keys    []string
}

func (l *sessionLine) Ask(_ context.Context, reqs []mcp.InputRequest) ([]mcp.InputAnswer, error) {
	res := make([]mcp.InputAnswer, len(reqs))
	for i, r := range reqs {
		l.keys = append(l.keys, r.Key)
		if a, ok := l.answers[r.Method]; ok {
			res[i].Result = json.RawMessage(a)
		} else {
			res[i].Err = mcp.ErrNoClientCapability
		}
	}
	return res, nil
}

// ctx carries the era and the client's capabilities, in every callback that
// gets one: handle_tool, get_prompt (which may ask too) and read_resource.
func TestCtxEverywhere(t *testing.T) {
	s, _ := load(t, "ask.lua", nil)
	ss, _ := open(t, s, "")
	call := &mcp.Call{RequestID: json.RawMessage("1"), ProtocolVersion: "2026-07-28",
		ClientCapabilities: json.RawMessage(`{"sampling":{}}`), Out: out{}}
	res, err := ss.CallTool(context.Background(), call, "era", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, text(t, string(res)), `{"version":"2026-07-28","caps":{"sampling":{}}}`)
	res, err = ss.CallTool(context.Background(), testCall(""), "era", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, text(t, string(res)), `{"caps":null}`)

	res, err = ss.ReadResource(context.Background(), call, "test://r")
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, string(res), `{"contents":[{"uri":"test://r","text":"2026-07-28"}]}`)

	line := &eraLine{answers: map[string]string{}}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	line.stop = cancel
	if _, err := ss.GetPrompt(ctx, &mcp.Call{RequestID: json.RawMessage("1"), Out: line}, "p", nil); !errors.Is(err, mcp.ErrInputRequired) {
		t.Fatalf("get_prompt round 1: %v, want ErrInputRequired", err)
	}
	ss2, _ := open(t, s, "")
	line = &eraLine{answers: map[string]string{"user_context": `{"action":"accept","content":{"context":"tea"}}`}}
	res, err = ss2.GetPrompt(context.Background(), &mcp.Call{RequestID: json.RawMessage("1"), Out: line}, "p", nil)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, string(res), `{"messages":[{"role":"user","content":{"type":"text","text":"tea"}}]}`)
}
