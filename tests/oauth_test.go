package tests

import (
	"bufio"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/luamcp/luamcp/host"
)

// Routes protected by the route option oauth, against a real authorization
// server: oauth2-mock-server from npm (node/as.mjs), which issues RS256 JWTs
// from its token endpoint and publishes its OpenID configuration and JWKS.
// luamcp discovers the JWKS from the issuer (the script names no jwks_url).

// authServer is a running node/as.mjs.
type authServer struct {
	issuer string
}

// startAuthServer starts node/as.mjs; it stops when the test ends.
func startAuthServer(t *testing.T) *authServer {
	t.Helper()
	cmd := exec.Command(nodeBin(t), "as.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = stdin.Close() // as.mjs stops when its stdin closes
		select {
		case <-exited:
		case <-time.After(waitLong):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("as.mjs did not stop when its stdin closed")
		}
	})
	var line string
	select {
	case line = <-first:
	case <-time.After(30 * time.Second):
		t.Fatalf("as.mjs did not start within 30 s; stderr:\n%s", stderr.String())
	}
	var hello struct{ Issuer string }
	if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Issuer == "" {
		t.Fatalf("as.mjs said %q, want {\"issuer\": URL}; stderr:\n%s", line, stderr.String())
	}
	return &authServer{issuer: hello.Issuer}
}

// token asks the token endpoint for a client_credentials access token; form
// adds the fields as.mjs shapes the token with (resource, sub, iss, exp_in,
// nbf_in, client_id) and scope.
func (a *authServer) token(t *testing.T, form map[string]string) string {
	t.Helper()
	v := url.Values{"grant_type": {"client_credentials"}}
	for k, x := range form {
		v.Set(k, x)
	}
	res, err := http.PostForm(a.issuer+"/token", v)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK || body.AccessToken == "" {
		t.Fatalf("token endpoint: HTTP %d, %v", res.StatusCode, err)
	}
	return body.AccessToken
}

// oauthScript is the protected route's script: who the caller is, as the
// callbacks see it, and a tool that needs another scope. Its auth hook
// refuses the subject "mallory", which the token alone would let in.
const oauthScript = `
return {
  route = {
    sessions = true,
    oauth = {
      issuer = %q,
      audience = %q,
      scopes = { "notes:read" },
      tool_scopes = { add_note = { "notes:write" } },
    },
  },
  init = function() return { name = "notes", version = "1" }, { tools = {} }, { notes = {} } end,
  tools = function()
    return {
      { name = "whoami", description = "the caller", input_schema = { type = "object" } },
      { name = "add_note", description = "needs notes:write", input_schema = { type = "object" } },
    }
  end,
  handle_tool = function(name, args, ctx, state)
    local a = ctx.auth
    if name == "whoami" then
      return a.subject .. " " .. table.concat(a.scopes, ",") .. " " .. (a.client_id or "-") .. " " .. a.claims.iss
    end
    table.insert(state.notes, a.subject)
    return "added " .. #state.notes
  end,
  auth = function(request)
    return request.auth ~= nil and request.auth.subject ~= "mallory"
  end,
}
`

// oauthFixture is a host serving oauthScript at /mcp/notes, with its audience
// the URL it is served at.
type oauthFixture struct {
	*testServer
	as       *authServer
	base     string // http://127.0.0.1:port
	endpoint string // base + /mcp/notes
}

func startOAuthServer(t *testing.T) *oauthFixture {
	t.Helper()
	as := startAuthServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	dir := t.TempDir()
	src := fmt.Sprintf(oauthScript, as.issuer, base+"/mcp/notes")
	if err := os.WriteFile(filepath.Join(dir, "notes.lua"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := newLogRecorder()
	h, err := host.New(host.Config{Dir: dir, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	if errs := h.LoadErrors(); len(errs) > 0 {
		t.Fatalf("load errors: %v", errs)
	}
	s := &testServer{t: t, host: h, logs: logs, client: &http.Client{Transport: &http.Transport{}}}
	s.srv = httptest.NewUnstartedServer(h.Handler())
	_ = s.srv.Listener.Close()
	s.srv.Listener = ln
	s.srv.Start()
	t.Cleanup(func() {
		s.close()
		if t.Failed() {
			t.Logf("server log:\n%s", logs.dump())
		}
	})
	return &oauthFixture{testServer: s, as: as, base: base, endpoint: base + "/mcp/notes"}
}

// good is the form of a token the route accepts, with overrides.
func (f *oauthFixture) good(over map[string]string) map[string]string {
	form := map[string]string{"resource": f.endpoint, "scope": "notes:read"}
	for k, v := range over {
		form[k] = v
	}
	return form
}

func bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// initializeAs opens a session with token.
func (f *oauthFixture) initializeAs(t *testing.T, token string) string {
	t.Helper()
	r := f.do(t, f.endpoint, call{Body: request(0, "initialize", initializeParams(latestVersion)), Header: bearer(token)})
	if r.Status != http.StatusOK || r.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: HTTP %d, session %q; body:\n%s", r.Status, r.Header.Get("Mcp-Session-Id"), r.Body)
	}
	return r.Header.Get("Mcp-Session-Id")
}

// callAs calls a tool in session sid with token and returns the reply.
func (f *oauthFixture) callAs(t *testing.T, token, sid, tool string) *reply {
	t.Helper()
	return f.do(t, f.endpoint, call{Body: request(1, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{}}),
		Session: sid, Header: bearer(token)})
}

func toolText(t *testing.T, r *reply) string {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("tools/call: HTTP %d; WWW-Authenticate %q; body:\n%s", r.Status, r.Header.Get("WWW-Authenticate"), r.Body)
	}
	m := r.response(t)
	if m.Error != nil {
		t.Fatalf("tools/call: error %d %q", m.Error.Code, m.Error.Message)
	}
	var res toolResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	return res.text(t)
}

func TestOAuthMetadata(t *testing.T) {
	f := startOAuthServer(t)
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp/notes", "/.well-known/oauth-protected-resource"} {
		r := f.do(t, f.base+path, call{Method: http.MethodGet, Header: map[string]string{"Origin": "https://app.example"}})
		if r.Status != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("GET %s: HTTP %d, Access-Control-Allow-Origin %q; body:\n%s", path, r.Status, r.Header.Get("Access-Control-Allow-Origin"), r.Body)
		}
		var doc struct {
			Resource               string   `json:"resource"`
			AuthorizationServers   []string `json:"authorization_servers"`
			ScopesSupported        []string `json:"scopes_supported"`
			BearerMethodsSupported []string `json:"bearer_methods_supported"`
		}
		if err := json.Unmarshal(r.Body, &doc); err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, r.Body)
		}
		if doc.Resource != f.endpoint || !slices.Equal(doc.AuthorizationServers, []string{f.as.issuer}) ||
			!slices.Equal(doc.ScopesSupported, []string{"notes:read", "notes:write"}) || !slices.Equal(doc.BearerMethodsSupported, []string{"header"}) {
			t.Errorf("GET %s = %+v", path, doc)
		}
		pre := f.do(t, f.base+path, call{Method: http.MethodOptions, Header: map[string]string{
			"Origin": "https://app.example", "Access-Control-Request-Method": "GET"}})
		if pre.Status != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != "*" ||
			!strings.Contains(pre.Header.Get("Access-Control-Allow-Methods"), "GET") {
			t.Errorf("OPTIONS %s: HTTP %d, headers %v", path, pre.Status, pre.Header)
		}
	}
	if r := f.do(t, f.base+"/.well-known/oauth-protected-resource/mcp/other", call{Method: http.MethodGet}); r.Status != http.StatusNotFound {
		t.Errorf("metadata of an unprotected path: HTTP %d, want 404", r.Status)
	}
}

func TestOAuthChallenge(t *testing.T) {
	f := startOAuthServer(t)
	body := request(0, "initialize", initializeParams(latestVersion))
	wantMeta := `resource_metadata="` + f.base + `/.well-known/oauth-protected-resource/mcp/notes"`

	r := f.do(t, f.endpoint, call{Body: body})
	ch := r.Header.Get("WWW-Authenticate")
	if r.Status != http.StatusUnauthorized || !strings.HasPrefix(ch, "Bearer ") || !strings.Contains(ch, wantMeta) ||
		!strings.Contains(ch, `scope="notes:read"`) {
		t.Errorf("no token: HTTP %d, WWW-Authenticate %q; want 401 with %s and scope", r.Status, ch, wantMeta)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if r := f.do(t, f.endpoint, call{Method: m, Session: "x"}); r.Status != http.StatusUnauthorized {
			t.Errorf("%s without a token: HTTP %d, want 401", m, r.Status)
		}
	}
	if r := f.do(t, f.endpoint, call{Body: body, Header: map[string]string{"Authorization": "Basic YTpi"}}); r.Status != http.StatusUnauthorized {
		t.Errorf("Basic credentials: HTTP %d, want 401", r.Status)
	}

	tok := f.as.token(t, f.good(nil))
	r = f.do(t, f.endpoint+"?access_token="+url.QueryEscape(tok), call{Body: body})
	if r.Status != http.StatusBadRequest || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_request"`) {
		t.Errorf("token in the query string: HTTP %d, WWW-Authenticate %q; want 400 invalid_request", r.Status, r.Header.Get("WWW-Authenticate"))
	}
	r = f.do(t, f.endpoint+"?access_token="+url.QueryEscape(tok), call{Body: body, Header: bearer(tok)})
	if r.Status != http.StatusBadRequest {
		t.Errorf("token in the query string and the header: HTTP %d, want 400", r.Status)
	}
}

func TestOAuthValidToken(t *testing.T) {
	f := startOAuthServer(t)
	tok := f.as.token(t, f.good(map[string]string{"scope": "notes:read openid"}))
	sid := f.initializeAs(t, tok)
	if got, want := toolText(t, f.callAs(t, tok, sid, "whoami")), "alice notes:read,openid test-client "+f.as.issuer; got != want {
		t.Errorf("whoami = %q, want %q", got, want)
	}
	// An expiry within the 60 s leeway still passes.
	late := f.as.token(t, f.good(map[string]string{"exp_in": "-20"}))
	if got := toolText(t, f.callAs(t, late, sid, "whoami")); !strings.HasPrefix(got, "alice ") {
		t.Errorf("token expired 20 s ago (leeway 60 s): whoami = %q", got)
	}
	// GET channel and DELETE with the session's subject.
	if r := f.do(t, f.endpoint, call{Method: http.MethodDelete, Session: sid, Header: bearer(tok)}); r.Status != http.StatusNoContent {
		t.Errorf("DELETE: HTTP %d, want 204", r.Status)
	}
}

func TestOAuthRefusedTokens(t *testing.T) {
	f := startOAuthServer(t)
	good := f.as.token(t, f.good(nil))
	stranger := signRS256(t, good, "stranger") // the good claims, a key the JWKS does not have
	cases := []struct {
		name  string
		token string
	}{
		{"wrong audience", f.as.token(t, f.good(map[string]string{"resource": f.base + "/mcp/other"}))},
		{"no audience", f.as.token(t, map[string]string{"scope": "notes:read"})},
		{"expired", f.as.token(t, f.good(map[string]string{"exp_in": "-120"}))},
		{"not yet valid", f.as.token(t, f.good(map[string]string{"nbf_in": "600"}))},
		{"wrong issuer", f.as.token(t, f.good(map[string]string{"iss": "https://evil.example"}))},
		{"unknown key", stranger},
		{"alg none", unsigned(t, good)},
		{"tampered payload", tamper(t, good)},
		{"garbage", "not.a.jwt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.do(t, f.endpoint, call{Body: request(0, "initialize", initializeParams(latestVersion)), Header: bearer(c.token)})
			ch := r.Header.Get("WWW-Authenticate")
			if r.Status != http.StatusUnauthorized || !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, "resource_metadata=") {
				t.Errorf("HTTP %d, WWW-Authenticate %q; want 401 invalid_token", r.Status, ch)
			}
		})
	}
	// The good token still passes: the refusals cached nothing.
	f.initializeAs(t, good)
}

func TestOAuthSessionSubject(t *testing.T) {
	f := startOAuthServer(t)
	alice := f.as.token(t, f.good(nil))
	bob := f.as.token(t, f.good(map[string]string{"sub": "bob"}))
	sid := f.initializeAs(t, alice)
	if r := f.callAs(t, bob, sid, "whoami"); r.Status != http.StatusForbidden {
		t.Errorf("bob's token on alice's session: HTTP %d, want 403; body:\n%s", r.Status, r.Body)
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if r := f.do(t, f.endpoint, call{Method: m, Session: sid, Header: bearer(bob)}); r.Status != http.StatusForbidden {
			t.Errorf("%s of alice's session with bob's token: HTTP %d, want 403", m, r.Status)
		}
	}
	if got := toolText(t, f.callAs(t, alice, sid, "whoami")); !strings.HasPrefix(got, "alice ") {
		t.Errorf("alice's session after bob's attempts: whoami = %q", got)
	}
	// The auth hook sees request.auth: it refuses mallory's valid token.
	mallory := f.as.token(t, f.good(map[string]string{"sub": "mallory"}))
	r := f.do(t, f.endpoint, call{Body: request(0, "initialize", initializeParams(latestVersion)), Header: bearer(mallory)})
	if r.Status != http.StatusUnauthorized {
		t.Errorf("mallory (refused by the auth hook): HTTP %d, want 401", r.Status)
	}
}

func TestOAuthScopes(t *testing.T) {
	f := startOAuthServer(t)
	reader := f.as.token(t, f.good(nil))
	writer := f.as.token(t, f.good(map[string]string{"scope": "notes:read notes:write"}))
	none := f.as.token(t, f.good(map[string]string{"scope": "profile"}))

	r := f.do(t, f.endpoint, call{Body: request(0, "initialize", initializeParams(latestVersion)), Header: bearer(none)})
	if ch := r.Header.Get("WWW-Authenticate"); r.Status != http.StatusForbidden || !strings.Contains(ch, `error="insufficient_scope"`) ||
		!strings.Contains(ch, `scope="notes:read"`) {
		t.Errorf("token without the route's scope: HTTP %d, WWW-Authenticate %q; want 403 insufficient_scope", r.Status, ch)
	}

	sid := f.initializeAs(t, reader)
	r = f.callAs(t, reader, sid, "add_note")
	if ch := r.Header.Get("WWW-Authenticate"); r.Status != http.StatusForbidden || !strings.Contains(ch, `error="insufficient_scope"`) ||
		!strings.Contains(ch, `scope="notes:read notes:write"`) {
		t.Errorf("add_note with notes:read: HTTP %d, WWW-Authenticate %q; want 403 insufficient_scope naming notes:write", r.Status, ch)
	}
	if got := toolText(t, f.callAs(t, writer, sid, "add_note")); got != "added 1" {
		t.Errorf("add_note with notes:write = %q, want %q (the refused call changed nothing)", got, "added 1")
	}
	if got := toolText(t, f.callAs(t, reader, sid, "whoami")); !strings.HasPrefix(got, "alice notes:read ") {
		t.Errorf("whoami with notes:read = %q", got)
	}
}

func TestOAuthStatelessEra(t *testing.T) {
	f := startOAuthServer(t)
	c := eraCall(1, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
	if r := f.do(t, f.endpoint, c); r.Status != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Errorf("2026-07-28 call without a token: HTTP %d, want 401 with a challenge", r.Status)
	}
	tok := f.as.token(t, f.good(map[string]string{"sub": "carol"}))
	c = eraCall(1, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}, nil)
	c.Header["Authorization"] = "Bearer " + tok
	if got := toolText(t, f.do(t, f.endpoint, c)); got != "carol notes:read test-client "+f.as.issuer {
		t.Errorf("2026-07-28 whoami = %q", got)
	}
	c = eraCall(1, "tools/call", map[string]any{"name": "add_note", "arguments": map[string]any{}}, nil)
	c.Header["Authorization"] = "Bearer " + tok
	if r := f.do(t, f.endpoint, c); r.Status != http.StatusForbidden {
		t.Errorf("2026-07-28 add_note with notes:read: HTTP %d, want 403", r.Status)
	}
}

// jwtParts splits a compact JWS and decodes its payload.
func jwtParts(t *testing.T, token string) (header, payload map[string]any) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a compact JWS", token)
	}
	for i, out := range []*map[string]any{&header, &payload} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil || json.Unmarshal(b, out) != nil {
			t.Fatalf("token part %d does not decode", i)
		}
	}
	return header, payload
}

func encodePart(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// signRS256 re-signs token's claims with a fresh RSA key named kid.
func signRS256(t *testing.T, token, kid string) string {
	t.Helper()
	_, payload := jwtParts(t, token)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	input := encodePart(t, map[string]any{"alg": "RS256", "typ": "JWT", "kid": kid}) + "." + encodePart(t, payload)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// unsigned is token's claims under alg "none", with the AS's kid.
func unsigned(t *testing.T, token string) string {
	t.Helper()
	header, payload := jwtParts(t, token)
	header["alg"] = "none"
	return encodePart(t, header) + "." + encodePart(t, payload) + "."
}

// tamper changes token's subject and keeps its signature.
func tamper(t *testing.T, token string) string {
	t.Helper()
	header, payload := jwtParts(t, token)
	payload["sub"] = "admin"
	return encodePart(t, header) + "." + encodePart(t, payload) + "." + strings.Split(token, ".")[2]
}
