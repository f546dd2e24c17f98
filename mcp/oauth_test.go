package mcp_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/luamcp/luamcp/internal/syncbuf"
	"github.com/luamcp/luamcp/mcp"
)

// fakeVerifier accepts the tokens "tok-<sub>[-<scope>...]"; "down" is an
// unreachable authorization server.
type fakeVerifier struct{}

func (fakeVerifier) Verify(_ context.Context, token string) (*mcp.AuthInfo, error) {
	if token == "down" {
		return nil, fmt.Errorf("%w: no JWKS", mcp.ErrVerifierUnavailable)
	}
	rest, ok := strings.CutPrefix(token, "tok-")
	if !ok {
		return nil, errors.New("bad token")
	}
	parts := strings.Split(rest, "-")
	return &mcp.AuthInfo{Subject: parts[0], Scopes: parts[1:], Claims: json.RawMessage(`{}`)}, nil
}

func oauthOptions() mcp.Options {
	return mcp.Options{Path: "/mcp", Sessions: true, Verifier: fakeVerifier{}, OAuth: &mcp.OAuth{
		Issuer: "https://as.example", Audience: "https://mcp.example/mcp", Scopes: []string{"r"},
		ToolScopes: map[string][]string{"echo": {"w"}},
	}}
}

// statelessOAuthOptions is a stateless route whose callers are told apart
// by their tokens' subjects.
func statelessOAuthOptions() mcp.Options {
	return mcp.Options{Path: "/mcp", Sessions: false, Verifier: fakeVerifier{}, OAuth: &mcp.OAuth{
		Issuer: "https://as.example", Audience: "https://mcp.example/mcp"}}
}

// elicitCall calls the fake tool that asks its client a question.
const elicitCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"elicit","arguments":{}}}`

func TestOAuthGate(t *testing.T) {
	var seen *mcp.AuthInfo
	opts := oauthOptions()
	opts.Auth = func(_ context.Context, r *mcp.AuthRequest) int {
		seen = r.Auth
		return 0
	}
	const meta = `resource_metadata="http://127.0.0.1:8750/.well-known/oauth-protected-resource/mcp"`
	tests := []struct {
		name      string
		headers   []string
		want      int
		challenge string // a part of WWW-Authenticate; "" none expected
	}{
		{"no token", nil, 401, `Bearer ` + meta + `, scope="r"`},
		{"basic", []string{"Authorization: Basic eDp5"}, 401, meta},
		{"empty bearer", []string{"Authorization: Bearer "}, 401, meta},
		{"invalid", []string{"Authorization: Bearer nope"}, 401, `Bearer error="invalid_token"`},
		{"no route scope", []string{"Authorization: Bearer tok-alice-x"}, 403, `error="insufficient_scope", ` + meta + `, scope="r"`},
		{"verifier down", []string{"Authorization: Bearer down"}, 503, ""},
		{"origin first", []string{"Origin: http://evil", "Authorization: Bearer tok-alice-r"}, 403, ""},
		{"valid", []string{"Authorization: bearer tok-alice-r"}, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen = nil
			f := newFakeServer()
			h := mcp.NewHandler(f, opts, nil, quietLogger())
			w := serveDirect(h, http.MethodPost, "127.0.0.1:1", "127.0.0.1:8750", oauthInitBody, tt.headers...)
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d (%s)", w.Code, tt.want, w.Body)
			}
			got := w.Header().Get("WWW-Authenticate")
			if tt.challenge != "" && !strings.Contains(got, tt.challenge) || tt.challenge == "" && got != "" {
				t.Errorf("WWW-Authenticate %q, want it to contain %q", got, tt.challenge)
			}
			if tt.want != 200 && (len(f.inits) != 0 || seen != nil) {
				t.Error("a refused request reached the auth hook or the server")
			}
			if tt.want == 200 && (seen == nil || seen.Subject != "alice") {
				t.Errorf("the auth hook saw %+v, want alice's token", seen)
			}
		})
	}
}

func TestOAuthQueryToken(t *testing.T) {
	h := mcp.NewHandler(newFakeServer(), oauthOptions(), nil, quietLogger())
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8750/mcp?access_token=tok-alice-r", strings.NewReader(oauthInitBody))
	r.RemoteAddr, r.Host = "127.0.0.1:1", "127.0.0.1:8750"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Authorization", "Bearer tok-alice-r")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 400 || !strings.Contains(w.Header().Get("WWW-Authenticate"), `error="invalid_request"`) {
		t.Errorf("query-string token: %d %q, want 400 invalid_request", w.Code, w.Header().Get("WWW-Authenticate"))
	}
}

func TestOAuthMetadataDocument(t *testing.T) {
	h := mcp.NewHandler(newFakeServer(), oauthOptions(), nil, quietLogger())
	w := httptest.NewRecorder()
	h.ServeMetadata(w, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", nil))
	want := `{"resource":"https://mcp.example/mcp","authorization_servers":["https://as.example"],"scopes_supported":["r","w"],"bearer_methods_supported":["header"]}`
	if w.Code != 200 || w.Body.String() != want || w.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("GET: %d %s %v", w.Code, w.Body, w.Header())
	}
	w = httptest.NewRecorder()
	h.ServeMetadata(w, httptest.NewRequest(http.MethodOptions, "/.well-known/oauth-protected-resource/mcp", nil))
	if w.Code != 204 || w.Header().Get("Access-Control-Allow-Methods") != "GET, OPTIONS" {
		t.Errorf("OPTIONS: %d %v", w.Code, w.Header())
	}
	w = httptest.NewRecorder()
	h.ServeMetadata(w, httptest.NewRequest(http.MethodPost, "/.well-known/oauth-protected-resource/mcp", nil))
	if w.Code != 405 {
		t.Errorf("POST: %d, want 405", w.Code)
	}
	w = httptest.NewRecorder()
	mcp.NewHandler(newFakeServer(), mcp.Options{Path: "/mcp"}, nil, quietLogger()).ServeMetadata(w, httptest.NewRequest(http.MethodGet, "/x", nil))
	if w.Code != 404 {
		t.Errorf("route without oauth: %d, want 404", w.Code)
	}
	if got := mcp.MetadataPath("/"); got != "/.well-known/oauth-protected-resource" {
		t.Errorf("MetadataPath(/) = %q", got)
	}
}

const oauthInitBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// On a stateless route the table of requests to clients is the route's: an
// answer reaches a call only from the client that made it (the token's
// subject on an oauth route, the credential an auth hook accepted on a hook
// route), and request ids reveal nothing of each other (no shared prefix and
// counter).
func TestStatelessClientAnswerOnlyFromCaller(t *testing.T) {
	hookOnly := mcp.Options{Path: "/mcp", Sessions: false, Auth: func(_ context.Context, r *mcp.AuthRequest) int {
		if strings.HasPrefix(r.Headers["authorization"], "Bearer tok-") {
			return 0
		}
		return http.StatusUnauthorized
	}}
	for _, tc := range []struct {
		name     string
		opts     mcp.Options
		answerer string
		status   int
	}{
		{"oauth: another subject", statelessOAuthOptions(), "tok-bob", http.StatusBadRequest},
		{"oauth: the caller", statelessOAuthOptions(), "tok-alice", http.StatusAccepted},
		{"hook: another credential", hookOnly, "tok-bob", http.StatusBadRequest},
		{"hook: the caller", hookOnly, "tok-alice", http.StatusAccepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer()
			rt := newRoute(t, f, tc.opts)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			bs := rt.stream(ctx, "", elicitCall, "Authorization: Bearer tok-bob")
			defer bs.close()
			bobID, _ := bs.nextEvent().msg()["id"].(string)
			as := rt.stream(ctx, "", elicitCall, "Authorization: Bearer tok-alice")
			defer as.close()
			aliceID, _ := as.nextEvent().msg()["id"].(string)
			if bobID == "" || aliceID == "" || bobID == aliceID {
				t.Fatalf("request ids %q and %q", bobID, aliceID)
			}
			if i := strings.LastIndexByte(bobID, '-'); i >= 0 && strings.HasPrefix(aliceID, bobID[:i+1]) &&
				strings.Trim(aliceID[i+1:], "0123456789") == "" {
				t.Errorf("ids %q and %q are a shared prefix and a counter", bobID, aliceID)
			}
			r := rt.post(`{"jsonrpc":"2.0","id":"`+aliceID+`","result":{"action":"accept","content":{"who":"answerer"}}}`,
				"Authorization: Bearer "+tc.answerer)
			if r.status != tc.status {
				t.Fatalf("answer from %s: status %d, want %d (%s)", tc.answerer, r.status, tc.status, r.body)
			}
			if tc.status != http.StatusAccepted {
				// alice's request still waits for her own answer.
				r = rt.post(`{"jsonrpc":"2.0","id":"`+aliceID+`","result":{"action":"accept","content":{"who":"alice"}}}`,
					"Authorization: Bearer tok-alice")
				if r.status != http.StatusAccepted {
					t.Fatalf("alice's own answer after the refused one: status %d (%s)", r.status, r.body)
				}
			}
			for {
				ev := as.nextEvent()
				if ev.eof {
					t.Fatal("alice's stream ended without a result")
				}
				if _, ok := ev.msg()["result"]; !ok {
					continue
				}
				want := "alice"
				if tc.status == http.StatusAccepted {
					want = "answerer"
				}
				if !strings.Contains(ev.data, want) {
					t.Fatalf("alice's result %s, want the answer of %s", ev.data, want)
				}
				break
			}
		})
	}
}

// TestStatelessPendingShareOfASubject: on a stateless route one client's
// waiting requests take at most an eighth of the route's table of requests
// to clients, whether the client is a token subject (oauth) or only a
// credential an auth hook accepted: the others' elicitations still go out.
func TestStatelessPendingShareOfASubject(t *testing.T) {
	hookOnly := mcp.Options{Path: "/mcp", Sessions: false, Auth: func(_ context.Context, r *mcp.AuthRequest) int {
		if strings.HasPrefix(r.Headers["authorization"], "Bearer tok-") {
			return 0
		}
		return http.StatusUnauthorized
	}}
	for name, opts := range map[string]mcp.Options{"oauth": statelessOAuthOptions(), "auth hook": hookOnly} {
		t.Run(name, func(t *testing.T) {
			rt := newRoute(t, newFakeServer(), opts)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first := func(who string) map[string]any {
				s := rt.stream(ctx, "", elicitCall, "Authorization: Bearer tok-"+who)
				t.Cleanup(s.close)
				return s.nextEvent().msg()
			}
			for i := range 128 {
				if m := first("bob"); m["method"] != "elicitation/create" {
					t.Fatalf("bob's elicitation %d: %v", i+1, m)
				}
			}
			// The 129th fails at once: a plain answer, not a stream with a request.
			resp := rt.open(ctx, http.MethodPost, elicitCall, "Authorization: Bearer tok-bob")
			if resp.Header.Get("Content-Type") == "text/event-stream" {
				resp.Body.Close()
				t.Fatal("bob's 129th elicitation was sent: one client can take every place")
			}
			if r := readReply(t, resp); r.errorCode() != mcp.CodeInternalError {
				t.Errorf("bob's 129th call: %d %s", r.status, r.body)
			}
			resp.Body.Close()
			if m := first("alice"); m["method"] != "elicitation/create" {
				t.Fatalf("alice's elicitation beside bob's: %v", m)
			}
		})
	}
}

// TestOAuthChallengeBehindTLSProxy: a request that reached the audience's
// host over plain HTTP came through a proxy that ended TLS: its challenge
// names the metadata document over https, where the client can fetch it.
// Any other host keeps the scheme the request came on.
func TestOAuthChallengeBehindTLSProxy(t *testing.T) {
	opts := mcp.Options{Path: "/mcp", Sessions: true, AllowRemoteAccess: true, Verifier: fakeVerifier{},
		OAuth: &mcp.OAuth{Issuer: "https://as.example", Audience: "https://mcp.example.com/mcp"}}
	rt := newRoute(t, newFakeServer(), opts)
	for _, tc := range []struct{ host, want string }{
		{"mcp.example.com", `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`},
		{"MCP.example.com", `resource_metadata="https://MCP.example.com/.well-known/oauth-protected-resource/mcp"`},
		{"10.0.0.5:8750", `resource_metadata="http://10.0.0.5:8750/.well-known/oauth-protected-resource/mcp"`},
	} {
		req, _ := http.NewRequest(http.MethodPost, rt.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Host = tc.host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(got, tc.want) {
			t.Errorf("Host %s: %d %q, want 401 with %s", tc.host, resp.StatusCode, got, tc.want)
		}
	}
}

// TestRequestStateBoundToSubject: a 2026-07-28 requestState is bound to the
// token subject whose call it continues (the spec's SHOULD): another
// subject presenting it is refused, its holder goes on. On a route with
// both oauth and an auth hook, a token without a subject is told apart by
// its credential, and a subject that spells that credential's key is still
// another principal.
func TestRequestStateBoundToSubject(t *testing.T) {
	const holderless = "tok--r" // a valid token with no subject
	sum := sha256.Sum256([]byte("Bearer " + holderless))
	spelled := "tok-credential " + base64.RawURLEncoding.EncodeToString(sum[:12])
	both := statelessOAuthOptions()
	both.Auth = func(context.Context, *mcp.AuthRequest) int { return 0 }
	for _, tc := range []struct {
		name              string
		opts              mcp.Options
		holder, presenter string
	}{
		{"another subject", statelessOAuthOptions(), "tok-alice", "tok-bob"},
		{"a subject spelling a credential's key", both, holderless, spelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRoute(t, newFakeServer(), tc.opts)
			call := func(token, extra string) reply {
				return rt.modern("tools/call", `{"name":"ask","arguments":{"keys":["a"],"again":true}`+extra+`}`, "Authorization: Bearer "+token)
			}
			r := call(tc.holder, `,"inputResponses":{"a":{"action":"accept","content":{"pin":"1234"}}}`)
			state, _ := r.result()["requestState"].(string)
			if state == "" {
				t.Fatalf("the holder's first round: %s", r.body)
			}
			retry := `,"inputResponses":{"again":{"roots":[]}},"requestState":` + mustJSON(state)
			if r := call(tc.presenter, retry); r.errorCode() != -32602 {
				t.Errorf("%s presenting the holder's requestState: %d %s", tc.presenter, r.status, r.body)
			}
			if r := call(tc.holder, retry); r.result()["resultType"] != "complete" || !strings.Contains(r.text(), "1234") {
				t.Errorf("the holder presenting its requestState: %d %s", r.status, r.body)
			}
		})
	}
}

// TestRequestStateAndTasksBoundToCredential: without oauth, the credential
// a route's auth hook accepted binds a 2026-07-28 call's requestState and
// its task as a token subject does: another client's credential can neither
// finish the call with this one's answers nor reach its task.
func TestRequestStateAndTasksBoundToCredential(t *testing.T) {
	rt := newRoute(t, newFakeServer(), mcp.Options{Auth: acceptAll})
	call := func(credential, extra string) reply {
		return rt.modern("tools/call", `{"name":"ask","arguments":{"keys":["a"],"again":true}`+extra+`}`, "Authorization: Bearer "+credential)
	}
	r := call("alice", `,"inputResponses":{"a":{"action":"accept","content":{"pin":"1234"}}}`)
	state, _ := r.result()["requestState"].(string)
	if state == "" {
		t.Fatalf("alice's first round: %s", r.body)
	}
	retry := `,"inputResponses":{"again":{"roots":[]}},"requestState":` + mustJSON(state)
	if r := call("bob", retry); r.errorCode() != -32602 {
		t.Errorf("bob presenting alice's requestState: %d %s", r.status, r.body)
	}
	if r := call("alice", retry); r.result()["resultType"] != "complete" || !strings.Contains(r.text(), "1234") {
		t.Errorf("alice presenting her requestState: %d %s", r.status, r.body)
	}

	r = rt.modernWith(metaTasks, "tools/call", `{"name":"task","arguments":{"support":"optional","wait":true}}`, "Authorization: Bearer alice")
	id, _ := r.result()["taskId"].(string)
	if id == "" {
		t.Fatalf("alice's task: %s", r.body)
	}
	get := func(credential string) reply {
		return rt.modernWith(metaTasks, "tasks/get", `{"taskId":`+mustJSON(id)+`}`, "Mcp-Name: "+id, "Authorization: Bearer "+credential)
	}
	if r := get("bob"); r.errorCode() != -32602 {
		t.Errorf("bob polling alice's task: %d %s", r.status, r.body)
	}
	if r := get("alice"); r.result()["taskId"] != id {
		t.Errorf("alice polling her task: %d %s", r.status, r.body)
	}
}

// TestOAuthChallengeOddPath: the challenge names the metadata document of a
// route whose path holds what a URL must escape by a URL that parses to it
// (it held "%of", or ended the quoted parameter at a '"').
func TestOAuthChallengeOddPath(t *testing.T) {
	for _, path := range []string{"/mcp/50%off", `/mcp/say"hi`, "/mcp/my tool"} {
		opts := statelessOAuthOptions()
		opts.Path = path
		h := mcp.NewHandler(newFakeServer(), opts, nil, quietLogger())
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8750/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.URL.Path, r.RemoteAddr, r.Host = path, "127.0.0.1:1", "127.0.0.1:8750"
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		ch := w.Header().Get("WWW-Authenticate")
		_, rest, _ := strings.Cut(ch, `resource_metadata="`)
		raw, _, _ := strings.Cut(rest, `"`)
		u, err := url.Parse(raw)
		if err != nil || u.Path != mcp.MetadataPath(path) {
			t.Errorf("route %q: challenge %q: resource_metadata %q parses to %v, %v; want path %q", path, ch, raw, u, err, mcp.MetadataPath(path))
		}
	}
}

// TestOAuthVerifierDownLogsOnce: while the verifier cannot judge tokens
// (the authorization server is down), any client can send any bearer
// string: each request gets 503 and is counted, and the warning is logged
// once per interval, not once per request.
func TestOAuthVerifierDownLogsOnce(t *testing.T) {
	var log syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	hub := mcp.NewHub(logger)
	rec := newRecorder()
	hub.SetObserver(rec)
	h := mcp.NewHandler(newFakeServer(), oauthOptions(), hub, logger)
	const flood = 20
	for i := range flood {
		w := serveDirect(h, http.MethodPost, "127.0.0.1:1", "127.0.0.1:8750", oauthInitBody, "Authorization: Bearer down")
		if w.Code != http.StatusServiceUnavailable {
			t.Fatalf("request %d: %d, want 503", i, w.Code)
		}
	}
	if n := len(rec.gates()); n != flood {
		t.Errorf("%d refusals counted, want %d", n, flood)
	}
	if n := strings.Count(log.String(), "cannot verify access tokens"); n != 1 {
		t.Errorf("%d warnings logged, want 1:\n%s", n, log.String())
	}
}

// TestOAuthAuthHook401Challenge: on an oauth route, a 401 of the auth hook
// (a valid token its rules refuse) carries the Bearer challenge, as every
// 401 must (RFC 6750 section 3, MCP "Authorization"), and counts as one
// refusal of the hook; its other statuses, and a 401 on a route without
// oauth, carry none.
func TestOAuthAuthHook401Challenge(t *testing.T) {
	for _, tt := range []struct {
		name      string
		oauth     bool
		status    int
		challenge string // a part of WWW-Authenticate; "" none expected
	}{
		{"oauth 401", true, 401, `Bearer error="invalid_token", error_description="the access token is not accepted by this route", resource_metadata="http://127.0.0.1:8750/.well-known/oauth-protected-resource/mcp", scope="r"`},
		{"oauth 403", true, 403, ""},
		{"no oauth 401", false, 401, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := mcp.Options{Path: "/mcp", Sessions: true}
			headers := []string{}
			if tt.oauth {
				opts = oauthOptions()
				headers = append(headers, "Authorization: Bearer tok-alice-r")
			}
			opts.Auth = func(context.Context, *mcp.AuthRequest) int { return tt.status }
			hub := mcp.NewHub(quietLogger())
			rec := newRecorder()
			hub.SetObserver(rec)
			h := mcp.NewHandler(newFakeServer(), opts, hub, quietLogger())
			w := serveDirect(h, http.MethodPost, "127.0.0.1:1", "127.0.0.1:8750", oauthInitBody, headers...)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d", w.Code, tt.status)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tt.challenge)
			}
			if g := rec.gates(); len(g) != 1 || g[0] != mcp.GateAuth {
				t.Errorf("refusals %v, want one of the auth hook", g)
			}
		})
	}
}
