package oauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
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
	metaPaths []string // metadata paths requested, in order
}

func newFakeAS(t *testing.T, metadataPath string) *fakeAS {
	a := &fakeAS{keys: map[string]*rsa.PrivateKey{}}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
