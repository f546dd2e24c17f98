package oauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/luamcp/luamcp/mcp"
)

// fakeAS is an authorization server's metadata and JWKS endpoints, whose
// published keys the test changes.
type fakeAS struct {
	srv       *httptest.Server
	mu        sync.Mutex
	keys      map[string]*rsa.PrivateKey // published, by kid
	jwksHits  atomic.Int32
	jwksDelay atomic.Int64 // how long /jwks takes to answer, in ns
	metaPaths []string     // metadata paths requested, in order
}

func newFakeAS(t *testing.T, metadataPath string) *fakeAS {
	a := &fakeAS{keys: map[string]*rsa.PrivateKey{}}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := time.Duration(a.jwksDelay.Load()); d > 0 && r.URL.Path == "/jwks" {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		switch r.URL.Path {
		case "/jwks":
			a.jwksHits.Add(1)
			var keys []map[string]string
			for kid, k := range a.keys {
				keys = append(keys, map[string]string{"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
					"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()),
					"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes())})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
		case metadataPath:
			a.metaPaths = append(a.metaPaths, r.URL.Path)
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": a.srv.URL, "jwks_uri": a.srv.URL + "/jwks"})
		default:
			a.metaPaths = append(a.metaPaths, r.URL.Path)
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *fakeAS) publish(t *testing.T, kid string) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	a.keys[kid] = k
	a.mu.Unlock()
	return k
}

const audience = "https://mcp.example.com/mcp/x"

func (a *fakeAS) claims(over jwt.MapClaims) jwt.MapClaims {
	c := jwt.MapClaims{"iss": a.srv.URL, "aud": []string{"other", audience}, "sub": "alice",
		"exp": time.Now().Add(time.Hour).Unix(), "scope": "a b", "client_id": "app", "org": "acme"}
	for k, v := range over {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func sign(t *testing.T, key *rsa.PrivateKey, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newVerifier(t *testing.T, cfg mcp.OAuth) *Verifier {
	v := New(cfg, nil, nil)
	t.Cleanup(v.Close)
	return v
}

func TestVerify(t *testing.T) {
	as := newFakeAS(t, "/.well-known/oauth-authorization-server")
	key := as.publish(t, "k1")
	v := newVerifier(t, mcp.OAuth{Issuer: as.srv.URL, Audience: audience})
	ctx := context.Background()

	info, err := v.Verify(ctx, sign(t, key, "k1", as.claims(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if info.Subject != "alice" || !slices.Equal(info.Scopes, []string{"a", "b"}) || info.ClientID != "app" {
		t.Errorf("AuthInfo = %+v", info)
	}
	var claims map[string]any
	if json.Unmarshal(info.Claims, &claims) != nil || claims["org"] != "acme" {
		t.Errorf("Claims = %s", info.Claims)
	}
	if scp, err := v.Verify(ctx, sign(t, key, "k1", as.claims(jwt.MapClaims{"scope": nil, "scp": []any{"x", "y"}, "client_id": nil, "azp": "spa"}))); err != nil ||
		!slices.Equal(scp.Scopes, []string{"x", "y"}) || scp.ClientID != "spa" {
		t.Errorf("scp/azp token: %+v, %v", scp, err)
	}

	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, as.claims(nil))
	hs.Header["kid"] = "k1"
	hsToken, _ := hs.SignedString([]byte("secret"))
	now := time.Now()
	refused := map[string]string{
		"expired":           sign(t, key, "k1", as.claims(jwt.MapClaims{"exp": now.Add(-2 * time.Minute).Unix()})),
		"no exp":            sign(t, key, "k1", as.claims(jwt.MapClaims{"exp": nil})),
		"nbf in the future": sign(t, key, "k1", as.claims(jwt.MapClaims{"nbf": now.Add(2 * time.Minute).Unix()})),
		"wrong audience":    sign(t, key, "k1", as.claims(jwt.MapClaims{"aud": "https://mcp.example.com/mcp/y"})),
		"wrong issuer":      sign(t, key, "k1", as.claims(jwt.MapClaims{"iss": "https://evil.example"})),
		"no sub":            sign(t, key, "k1", as.claims(jwt.MapClaims{"sub": nil})),
		"HS256":             hsToken,
	}
	for name, tok := range refused {
		if _, err := v.Verify(ctx, tok); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Within the 60 s leeway.
	if _, err := v.Verify(ctx, sign(t, key, "k1", as.claims(jwt.MapClaims{"exp": now.Add(-30 * time.Second).Unix()}))); err != nil {
		t.Errorf("expired 30 s ago: %v", err)
	}
	if want := []string{"/.well-known/oauth-authorization-server"}; !slices.Equal(as.metaPaths, want) {
		t.Errorf("metadata requests %v, want %v (discovery once)", as.metaPaths, want)
	}
}

func TestVerifyOIDCDiscovery(t *testing.T) {
	as := newFakeAS(t, "/.well-known/openid-configuration")
	key := as.publish(t, "k1")
	v := newVerifier(t, mcp.OAuth{Issuer: as.srv.URL, Audience: audience})
	if _, err := v.Verify(context.Background(), sign(t, key, "k1", as.claims(nil))); err != nil {
		t.Fatal(err)
	}
	want := []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}
	if !slices.Equal(as.metaPaths, want) {
		t.Errorf("metadata requests %v, want %v", as.metaPaths, want)
	}
}

func TestVerifyDiscoveryFails(t *testing.T) {
	as := newFakeAS(t, "/nowhere")
	v := newVerifier(t, mcp.OAuth{Issuer: as.srv.URL, Audience: audience})
	_, err := v.Verify(context.Background(), "x.y.z")
	if !errors.Is(err, mcp.ErrVerifierUnavailable) {
		t.Fatalf("err = %v, want ErrVerifierUnavailable", err)
	}
	n := len(as.metaPaths)
	if _, err := v.Verify(context.Background(), "x.y.z"); !errors.Is(err, mcp.ErrVerifierUnavailable) || len(as.metaPaths) != n {
		t.Errorf("second token: err %v, %d more metadata requests; want the remembered failure, none", err, len(as.metaPaths)-n)
	}
}

// TestVerifyDiscoveryIssuerExact: metadata that names its issuer otherwise
// than the route, if only by a terminating "/", is not used (RFC 8414
// section 3.3): its tokens' iss would not be the route's issuer either, and
// each would be refused with nothing in the log to say why. The verifier
// cannot judge (503), and its error names both.
func TestVerifyDiscoveryIssuerExact(t *testing.T) {
	as := newFakeAS(t, "/.well-known/oauth-authorization-server")
	key := as.publish(t, "k1")
	v := newVerifier(t, mcp.OAuth{Issuer: as.srv.URL + "/", Audience: audience})
	_, err := v.Verify(context.Background(), sign(t, key, "k1", as.claims(nil)))
	if !errors.Is(err, mcp.ErrVerifierUnavailable) || !strings.Contains(err.Error(), fmt.Sprintf("its issuer %q is not %q", as.srv.URL, as.srv.URL+"/")) {
		t.Errorf("err = %v, want ErrVerifierUnavailable naming both issuers", err)
	}
}

// TestVerifyUnknownKID: a token signed by a key the verifier has not seen
// makes it fetch the JWKS again (a rotation is picked up), and a second
// unknown kid right after does not (rate limit).
func TestVerifyUnknownKID(t *testing.T) {
	as := newFakeAS(t, "/.well-known/oauth-authorization-server")
	k1 := as.publish(t, "k1")
	v := newVerifier(t, mcp.OAuth{Issuer: as.srv.URL, Audience: audience, JWKSURL: as.srv.URL + "/jwks"})
	ctx := context.Background()
	if _, err := v.Verify(ctx, sign(t, k1, "k1", as.claims(nil))); err != nil {
		t.Fatal(err)
	}
	if len(as.metaPaths) != 0 {
		t.Errorf("jwks_url set, yet metadata was requested: %v", as.metaPaths)
	}
	before := as.jwksHits.Load()
	k2 := as.publish(t, "k2") // rotation
	if _, err := v.Verify(ctx, sign(t, k2, "k2", as.claims(nil))); err != nil {
		t.Fatalf("token of the rotated-in key: %v", err)
	}
	if got := as.jwksHits.Load() - before; got != 1 {
		t.Errorf("JWKS fetched %d times for the new kid, want 1", got)
	}
	k3 := as.publish(t, "k3")
	start := time.Now()
	if _, err := v.Verify(ctx, sign(t, k3, "k3", as.claims(nil))); err == nil {
		t.Error("a second unknown kid within the rate limit was accepted (so the JWKS was fetched again)")
	}
	if got := as.jwksHits.Load() - before; got != 1 {
		t.Errorf("JWKS fetched %d times after a second unknown kid, want still 1", got)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the rate-limited token took %v: it waited for the limiter", d)
	}
	// Known keys pass while no refetch is due.
	for kid, key := range map[string]*rsa.PrivateKey{"k1": k1, "k2": k2} {
		if _, err := v.Verify(ctx, sign(t, key, kid, as.claims(nil))); err != nil {
			t.Errorf("%s while the refetch is rate-limited: %v", kid, err)
		}
	}
}

// TestVerifyRefetchOutlivesClient: the one refetch an unknown kid may make per
// UnknownKIDInterval is not aborted when the client that caused it hangs up,
// so a key rotated in meanwhile is known afterwards.
func TestVerifyRefetchOutlivesClient(t *testing.T) {
	as := newFakeAS(t, "/.well-known/oauth-authorization-server")
	k1 := as.publish(t, "k1")
	v := newVerifier(t, mcp.OAuth{Issuer: as.srv.URL, Audience: audience, JWKSURL: as.srv.URL + "/jwks"})
	if _, err := v.Verify(context.Background(), sign(t, k1, "k1", as.claims(nil))); err != nil {
		t.Fatal(err)
	}
	before := as.jwksHits.Load()
	k2 := as.publish(t, "k2") // rotation
	as.jwksDelay.Store(int64(300 * time.Millisecond))
	// Any token with a kid the set lacks, from a client that leaves while
	// the refetch is under way.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := v.Verify(ctx, sign(t, k1, "unknown", as.claims(nil))); err == nil {
		t.Error("a token with an unknown kid was accepted")
	}
	if _, err := v.Verify(context.Background(), sign(t, k2, "k2", as.claims(nil))); err != nil {
		t.Errorf("token of the key rotated in during the abandoned refetch: %v", err)
	}
	if got := as.jwksHits.Load() - before; got != 1 {
		t.Errorf("JWKS fetched %d times, want 1", got)
	}
}

// TestVerifyJWKSBounded: a JWKS host answering with a huge document makes
// the fetch fail after maxJWKSBytes instead of holding all of it.
func TestVerifyJWKSBounded(t *testing.T) {
	const size = 16 << 20
	chunk := []byte(strings.Repeat("a", 64<<10))
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"keys":[],"x":"`))
		for range size / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return // the client hung up
			}
		}
		w.Write([]byte(`"}`))
	}))
	defer srv.Close()
	var log bytes.Buffer
	v := New(mcp.OAuth{Issuer: srv.URL, Audience: audience, JWKSURL: srv.URL + "/jwks"}, nil, slog.New(slog.NewTextHandler(&log, nil)))
	defer v.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	// The first token fetches the set once; a malformed one goes no further.
	if _, err := v.Verify(context.Background(), "x.y.z"); err == nil {
		t.Fatal("a malformed token was accepted")
	}
	runtime.ReadMemStats(&after)
	if n := hits.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times, want 1", n)
	}
	if !strings.Contains(log.String(), "response body larger than") {
		t.Errorf("log = %q, want the JWKS fetch to fail on its size", log.String())
	}
	// The JSON decoder's buffer grows by doubling: a few times the bound.
	if got := after.TotalAlloc - before.TotalAlloc; got > size/2 {
		t.Errorf("%d KiB allocated fetching a %d KiB JWKS, want under %d KiB", got>>10, size>>10, size/2>>10)
	}
}

// TestClientBoundsBodies: a body of up to maxJWKSBytes reads whole; one byte
// more fails.
func TestClientBoundsBodies(t *testing.T) {
	for _, size := range []int{0, maxJWKSBytes - 1, maxJWKSBytes, maxJWKSBytes + 1, 3 * maxJWKSBytes} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write(make([]byte, size))
		}))
		res, err := newClient(nil).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		srv.Close()
		if fits := size <= maxJWKSBytes; fits != (err == nil) || fits && n != int64(size) {
			t.Errorf("%d-byte body: read %d bytes, err %v", size, n, err)
		}
	}
}

// TestDiscoverJWKSURIScheme: a discovered jwks_uri follows the rule of the
// route's jwks_url: https, or http only on a loopback host.
func TestDiscoverJWKSURIScheme(t *testing.T) {
	for _, tc := range []struct {
		jwksURI string
		ok      bool
	}{
		{"https://keys.example.com/jwks", true},
		{"http://127.0.0.1:8080/jwks", true},
		{"http://localhost/jwks", true},
		{"http://[::1]/jwks", true},
		{"http://keys.example.com/jwks", false},
		{"http://127.0.0.1.example.com/jwks", false},
		{"ftp://keys.example.com/jwks", false},
		{"https:///jwks", false},
		{"/jwks", false},
		{"", false},
	} {
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": srv.URL, "jwks_uri": tc.jwksURI})
		}))
		got, err := discoverJWKS(context.Background(), srv.Client(), srv.URL)
		srv.Close()
		if tc.ok && (err != nil || got != tc.jwksURI) {
			t.Errorf("jwks_uri %q: got %q, %v; want it accepted", tc.jwksURI, got, err)
		} else if !tc.ok && err == nil {
			t.Errorf("jwks_uri %q: accepted", tc.jwksURI)
		}
	}
}

// TestClientRedirects: the verifier's client follows redirects that keep to
// https (or stay on loopback http), never one from https to http.
func TestClientRedirects(t *testing.T) {
	var plainHits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		plainHits.Add(1)
	}))
	defer plain.Close()
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
		}
	}))
	defer tls.Close()
	client := newClient(tls.Client())
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{tls.URL, tls.URL + "/jwks", true},
		{plain.URL, plain.URL + "/jwks", true},
		{plain.URL, tls.URL + "/jwks", true},
		{tls.URL, plain.URL + "/jwks", false},              // https to http, even on loopback
		{plain.URL, "http://keys.example.com/jwks", false}, // http off loopback
	} {
		res, err := client.Get(tc.from + "/?to=" + url.QueryEscape(tc.to))
		if err == nil {
			res.Body.Close()
		}
		// Refused by the client itself, not by a failed connection.
		if refused := err != nil && strings.Contains(err.Error(), "oauth: redirect"); tc.ok == refused || tc.ok && err != nil {
			t.Errorf("redirect %s to %s: err %v, want ok %v", tc.from, tc.to, err, tc.ok)
		}
	}
	if n := plainHits.Load(); n != 1 {
		t.Errorf("the http server answered %d requests, want 1 (only the http to http redirect)", n)
	}
}

// TestAuthInfoScopes: scopes come from scope (a space-separated string, RFC
// 9068, or a list), else from scp (a list, as Okta sends it, or a
// space-separated string, as Entra ID does).
func TestAuthInfoScopes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		claims jwt.MapClaims
		want   []string
	}{
		{"none", jwt.MapClaims{}, []string{}},
		{"scope string", jwt.MapClaims{"scope": "a  b"}, []string{"a", "b"}},
		{"scope list", jwt.MapClaims{"scope": []any{"a", "b"}}, []string{"a", "b"}},
		{"scp list", jwt.MapClaims{"scp": []any{"x", "y"}}, []string{"x", "y"}},
		{"scp string", jwt.MapClaims{"scp": "notes:read notes:write"}, []string{"notes:read", "notes:write"}},
		{"scope before scp", jwt.MapClaims{"scope": "a b", "scp": "x y"}, []string{"a", "b"}},
		{"empty scope, scp", jwt.MapClaims{"scope": "", "scp": "x"}, []string{"x"}},
	} {
		tc.claims["sub"] = "alice"
		info, err := authInfo(tc.claims)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(info.Scopes, tc.want) {
			t.Errorf("%s: scopes %q, want %q", tc.name, info.Scopes, tc.want)
		}
	}
}

// TestVerifyJWKSDown: while no key of the JWKS is known (it could not be
// fetched), a well-formed token cannot be judged: the verifier is
// unavailable (503), not the token invalid (a 401 would send the client to
// authorize again, to no avail). A malformed token is refused all the same.
// (Once the JWKS answers, the next refetch slot finds the key:
// TestVerifyUnknownKID.)
func TestVerifyJWKSDown(t *testing.T) {
	as := newFakeAS(t, "/.well-known/oauth-authorization-server")
	key := as.publish(t, "k1")
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	defer down.Close()
	v := newVerifier(t, mcp.OAuth{Issuer: as.srv.URL, Audience: audience, JWKSURL: down.URL + "/jwks"})
	token := sign(t, key, "k1", as.claims(nil))
	if _, err := v.Verify(context.Background(), token); !errors.Is(err, mcp.ErrVerifierUnavailable) {
		t.Fatalf("JWKS down: err = %v, want ErrVerifierUnavailable", err)
	}
	if _, err := v.Verify(context.Background(), "x.y.z"); err == nil || errors.Is(err, mcp.ErrVerifierUnavailable) {
		t.Errorf("JWKS down, a malformed token: err = %v, want it refused as such", err)
	}
}
