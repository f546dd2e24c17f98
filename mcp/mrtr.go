package mcp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file is the 2026-07-28 era's multi-round-trip requests: a call that
// asks the client for input ends with resultType "input_required", its
// inputRequests and a requestState; the client runs the call again with
// inputResponses and that requestState, and the callback, run again from its
// start, gets the recorded answers in order until the next question.
//
// requestState carries the answers of the earlier rounds. It is
// attacker-controlled, so it is authenticated with HMAC-SHA256 under the
// process's state key (Hub.SetStateKey) and bound to the method, the name (or
// uri) and the arguments of the call, and it expires: a state that was
// altered, that belongs to another call, or that is too old is refused with
// -32602.

// stateTTL is how long a requestState stays valid.
const stateTTL = time.Hour

// now is the clock requestStates are issued and checked by (tests move it).
var now = time.Now

// stateKeyMin is the shortest state key SetStateKey takes.
const stateKeyMin = 16

// mrtr is the multi-round-trip record of one run of a 2026-07-28 call. It is
// used by the call's goroutine, then read by the handler once the call is
// over.
type mrtr struct {
	client   clientCaps
	logLevel int // the request's _meta log level, or noLogs
	// subject is the request's client (Handler.clientKey: its OAuth
	// subject, else the credential its route's auth hook accepted, each
	// with the prefix of its namespace), "" for neither: its
	// requestState is bound to it, as the spec advises, so that another
	// principal cannot finish the call with this one's answers.
	subject string
	// stop cancels the call's context with the reason it must end.
	stop context.CancelCauseFunc

	mu sync.Mutex
	// answers are the client's answers by key: the verified state's and
	// this request's inputResponses (which win).
	answers map[string]json.RawMessage
	// used are the answers this run consumed, carried by the next state.
	used map[string]json.RawMessage
	// seq names the requests asked without a key, by their place in the run.
	seq int
	// round is the round of unanswered requests that ended the run.
	round []InputRequest
	// failure is the *Error that ended the run instead (a missing client
	// capability, a malformed answer).
	failure *Error
	// task is the task the call became (taskStart.start), whose rounds wait
	// for tasks/update instead of ending the run; nil before.
	task  *task
	tasks *taskStore
}

// ask answers one round of requests from the record, or ends the run: with
// ErrInputRequired when some are unanswered, with -32021 when the client
// lacks a capability they need, with -32602 when an answer is malformed.
func (r *mrtr) ask(ctx context.Context, reqs []InputRequest) ([]InputAnswer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The run is over once a round ended it: a callback that caught the
	// error and asks again changes nothing (its context is cancelled).
	if r.failure != nil {
		return nil, r.failure
	}
	if r.round != nil {
		return nil, fmt.Errorf("the call already awaits input: %w", ErrInputRequired)
	}
	out := make([]InputAnswer, len(reqs))
	var round []InputRequest
	var at []int // the place in reqs of each request of round
	var missing []string
	for i, q := range reqs {
		key := q.Key
		if key == "" {
			r.seq++
			key = strconv.Itoa(r.seq)
		}
		if q.Params != nil && !json.Valid(q.Params) {
			return nil, errInvalidJSON
		}
		if !r.client.allows(q.Method) {
			missing = append(missing, capabilityOf(q.Method))
			continue
		}
		if a, ok := r.answers[key]; ok {
			if !validAnswer(q.Method, a) {
				return nil, r.end(&Error{Code: CodeInvalidParams,
					Message: "Invalid params: inputResponses." + key + " is not a valid " + q.Method + " result"})
			}
			out[i].Result = a
			if r.used == nil {
				r.used = make(map[string]json.RawMessage)
			}
			r.used[key] = a
			continue
		}
		round = append(round, InputRequest{Key: key, Method: q.Method, Params: q.Params})
		at = append(at, i)
	}
	if len(missing) > 0 {
		data := []byte(`{"requiredCapabilities":{`)
		for i, c := range missing {
			if i > 0 {
				data = append(data, ',')
			}
			data = appendString(data, c)
			data = append(data, ":{}"...)
		}
		data = append(data, "}}"...)
		return nil, r.end(&Error{Code: CodeMissingClientCapability,
			Message: "Missing required client capability", Data: data})
	}
	if len(round) > 0 && r.task != nil {
		// A task waits for tasks/update; r.mu guards nothing the
		// handler reads meanwhile (the call's response is gone).
		t := r.task
		r.mu.Unlock()
		got, err := r.tasks.await(ctx, t, round)
		r.mu.Lock()
		if err != nil {
			return nil, err
		}
		for k, q := range round {
			out[at[k]].Result = got[q.Key]
		}
		return out, nil
	}
	if len(round) > 0 {
		r.round = round
		r.stop(ErrInputRequired)
		return nil, fmt.Errorf("%d request(s) to the client unanswered: %w", len(round), ErrInputRequired)
	}
	return out, nil
}

// end records e as the run's answer and stops the call.
func (r *mrtr) end(e *Error) error {
	r.failure = e
	r.stop(e)
	return e
}

// capabilityOf names the client capability a request to the client needs.
func capabilityOf(method string) string {
	switch method {
	case "elicitation/create":
		return "elicitation"
	case "sampling/createMessage":
		return "sampling"
	case "roots/list":
		return "roots"
	}
	return method
}

// validAnswer reports whether a is a well-formed result of method: an
// ElicitResult with its action, a CreateMessageResult with role and content,
// a ListRootsResult with its roots.
func validAnswer(method string, a []byte) bool {
	if kindOf(a) != '{' {
		return false
	}
	switch method {
	case "elicitation/create":
		action, ok := stringMember(a, "action")
		return ok && (action == "accept" || action == "decline" || action == "cancel")
	case "sampling/createMessage":
		_, ok := stringMember(a, "role")
		_, hasContent := member(a, "content")
		return ok && hasContent
	case "roots/list":
		roots, ok := member(a, "roots")
		return ok && kindOf(roots) == '['
	}
	return true
}

// errBadState is the answer to a requestState that fails verification.
var errBadState = &Error{Code: CodeInvalidParams, Message: "Invalid params: requestState failed verification"}

// statePayload is what a requestState carries, before its MAC.
type statePayload struct {
	Method  string                     `json:"m"`
	Name    string                     `json:"n"`
	Args    []byte                     `json:"a"` // SHA-256 of the canonical arguments
	Expires int64                      `json:"e"` // Unix seconds
	Subject string                     `json:"s,omitempty"`
	Answers map[string]json.RawMessage `json:"r"`
}

// callBinding returns what a requestState is bound to: the call's method,
// name (or uri) and the digest of its canonical arguments.
func callBinding(m *message, spec *methodSpec) (name string, digest []byte) {
	if spec != nil && spec.nameParam != "" {
		name, _ = stringMember(m.params, spec.nameParam)
	}
	args, _ := member(m.params, "arguments")
	sum := sha256.Sum256(canonicalJSON(args))
	return name, sum[:]
}

// canonicalJSON re-encodes v with sorted keys and no spaces, so that a
// client that re-serializes the same arguments gets the same digest.
func canonicalJSON(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var x any
	if d.Decode(&x) != nil {
		return v
	}
	b, err := json.Marshal(x)
	if err != nil {
		return v
	}
	return b
}

// sealState encodes and authenticates p: base64url(payload) "." base64url(mac).
func sealState(key []byte, p *statePayload) string {
	body, _ := json.Marshal(p)
	mac := stateMAC(key, body)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(body) + "." + enc.EncodeToString(mac)
}

// openState verifies a requestState and its binding and returns its payload.
func openState(key []byte, state string, method, name string, digest []byte, subject string, now time.Time) (*statePayload, error) {
	enc := base64.RawURLEncoding
	i := strings.IndexByte(state, '.')
	if i < 0 {
		return nil, errBadState
	}
	body, err1 := enc.DecodeString(state[:i])
	mac, err2 := enc.DecodeString(state[i+1:])
	if err1 != nil || err2 != nil || !hmac.Equal(mac, stateMAC(key, body)) {
		return nil, errBadState
	}
	var p statePayload
	if json.Unmarshal(body, &p) != nil {
		return nil, errBadState
	}
	if p.Method != method || p.Name != name || !bytes.Equal(p.Args, digest) || p.Subject != subject || now.Unix() > p.Expires {
		return nil, errBadState
	}
	return &p, nil
}

func stateMAC(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("luamcp requestState v1\x00"))
	m.Write(body)
	return m.Sum(nil)
}

// newRecord reads the multi-round-trip members of a 2026-07-28 request
// (inputResponses, requestState) into a record for its run. A malformed
// member or a state that fails verification is a -32602.
func (h *Handler) newRecord(m *message, spec *methodSpec, rm *requestMeta, subject string, stop context.CancelCauseFunc) (*mrtr, *Error) {
	r := &mrtr{client: rm.client, logLevel: rm.logLevel, subject: subject, stop: stop}
	if !spec.mayAsk {
		return r, nil
	}
	if v, ok := member(m.params, "requestState"); ok {
		state, ok := jsonString(v)
		if !ok {
			return nil, errBadState
		}
		name, digest := callBinding(m, spec)
		p, err := openState(h.hub.stateKey(), state, m.method, name, digest, subject, now())
		if err != nil {
			return nil, errBadState
		}
		r.answers = p.Answers
	}
	if v, ok := member(m.params, "inputResponses"); ok {
		if kindOf(v) != '{' {
			return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: inputResponses must be an object"}
		}
		it := objectIter{data: v}
		for {
			k, a, more := it.next()
			if !more {
				break
			}
			if kindOf(a) != '{' {
				return nil, &Error{Code: CodeInvalidParams, Message: "Invalid params: inputResponses." + string(k) + " must be an object"}
			}
			if r.answers == nil {
				r.answers = make(map[string]json.RawMessage)
			}
			r.answers[string(k)] = a
		}
	}
	return r, nil
}

// appendInputRequired appends the input_required answer of a run that r
// ended: its round's inputRequests and a new requestState carrying every
// answer the run used.
func (h *Handler) appendInputRequired(dst []byte, m *message, spec *methodSpec, r *mrtr) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	name, digest := callBinding(m, spec)
	state := sealState(h.hub.stateKey(), &statePayload{
		Method: m.method, Name: name, Args: digest,
		Expires: now().Add(stateTTL).Unix(), Subject: r.subject, Answers: r.used,
	})
	dst = appendResult(dst, m.id, nil)
	dst = dst[:len(dst)-1]
	dst = append(dst, `{"resultType":"input_required","inputRequests":`...)
	dst = appendInputRequests(dst, r.round)
	dst = append(dst, `,"requestState":`...)
	dst = appendString(dst, state)
	return append(dst, "}}"...)
}

// appendInputRequests appends the inputRequests object of round: each
// request's {method, params} by its key.
func appendInputRequests(dst []byte, round []InputRequest) []byte {
	dst = append(dst, '{')
	for i, q := range round {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, q.Key)
		dst = append(dst, `:{"method":`...)
		dst = appendString(dst, q.Method)
		if q.Params != nil {
			dst = append(dst, `,"params":`...)
			dst = append(dst, q.Params...)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}
