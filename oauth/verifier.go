// Package oauth verifies the JWT access tokens of the routes protected by the
// route option oauth: it implements [mcp.TokenVerifier] with
// github.com/golang-jwt/jwt/v5 against the issuer's JWKS, fetched and kept
// fresh by github.com/MicahParks/keyfunc/v3.
//
// A token passes when it is a JWS signed with an allowed asymmetric
// algorithm by a key of the JWKS (an unknown kid refetches the set, at most
// once per [UnknownKIDInterval]), its iss is the issuer, its aud contains the
// route's audience (RFC 8707), it has an exp in the future and no nbf in the
// future, both with [Leeway], and a sub.
package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/luamcp/luamcp/mcp"
	"golang.org/x/time/rate"
)

// Tuning of every Verifier.
const (
	// Leeway is the clock skew allowed on exp and nbf.
	Leeway = 60 * time.Second
	// UnknownKIDInterval is how often a token with a kid the JWKS lacks
	// may make the verifier fetch the set again (key rotation); tokens with
	// unknown kids in between are refused without a fetch.
	UnknownKIDInterval = 30 * time.Second
	// RefreshInterval is how often the JWKS is fetched in the background.
	RefreshInterval = time.Hour
	// DiscoveryRetry is how long a failed discovery of the issuer's
	// metadata is remembered before a token makes the verifier try again.
	DiscoveryRetry = 10 * time.Second
	// fetchTimeout bounds each request to the authorization server.
	fetchTimeout = 10 * time.Second
)

// Verifier checks the access tokens of one oauth route. It is safe for
// concurrent use; Close stops its background JWKS refresh.
type Verifier struct {
	cfg    mcp.OAuth
	client *http.Client
	logger *slog.Logger
	parser *jwt.Parser

	ctx    context.Context // ends the keyfunc refresh goroutine; Close cancels it
	cancel context.CancelFunc

	mu sync.Mutex // guards the fields below
	// kf is the JWKS once known: set from cfg.JWKSURL at once, or after
	// discovery succeeded; never changes afterwards.
	kf keyfunc.Keyfunc
	// refetch limits the JWKS fetches a token with an unknown kid makes
	// (keyfunc waits on it; keys looks at it first so that nobody waits).
	refetch *rate.Limiter
	// failedAt is when discovery last failed (zero: it did not); a token
	// within DiscoveryRetry of it is answered with the same error.
	failedAt time.Time
	failErr  error
}

// New returns the verifier of cfg. client nil means a client with a 10 s
// timeout; either way the verifier fetches with a copy whose responses are
// bounded (maxJWKSBytes) and whose redirects stay on https (http only on a
// loopback host). Nothing is fetched yet: the JWKS (and the issuer's
// metadata, when cfg.JWKSURL is "") is fetched for the first token, so that
// a route mounts while its authorization server is down.
func New(cfg mcp.OAuth, client *http.Client, logger *slog.Logger) *Verifier {
	client = newClient(client)
	if logger == nil {
		logger = slog.Default()
	}
	algs := cfg.Algorithms
	if len(algs) == 0 {
		algs = mcp.DefaultAlgorithms
	}
	v := &Verifier{cfg: cfg, client: client, logger: logger, refetch: rate.NewLimiter(rate.Every(UnknownKIDInterval), 1)}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods(algs),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.Audience),
		jwt.WithLeeway(Leeway),
		jwt.WithExpirationRequired(),
	)
	v.ctx, v.cancel = context.WithCancel(context.Background())
	return v
}

// Close stops the background refresh of the JWKS.
func (v *Verifier) Close() { v.cancel() }

// Verify implements [mcp.TokenVerifier].
func (v *Verifier) Verify(ctx context.Context, token string) (*mcp.AuthInfo, error) {
	kf, err := v.keys(ctx)
	if err != nil {
		return nil, err
	}
	// An unknown kid makes keyfunc wait for a refetch slot, then fetch the
	// set under the same context. When no slot is free now, a context that
	// is already past its deadline makes it give up at once (a known kid is
	// read from memory and never looks at the deadline). Else the fetch has
	// its usual time, detached from the request: the slot is spent once it
	// starts, so a client hanging up must not abort it and leave a
	// rotated-in key unknown until the next slot or hourly refresh.
	var cancel context.CancelFunc
	if v.refetch.Tokens() < 1 {
		ctx, cancel = context.WithDeadline(ctx, time.Now())
	} else {
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	}
	defer cancel()
	claims := jwt.MapClaims{}
	if _, err := v.parser.ParseWithClaims(token, claims, kf.KeyfuncCtx(ctx)); err != nil {
		if errors.Is(err, jwt.ErrTokenUnverifiable) && noKeys(ctx, kf) {
			// The JWKS could not be fetched (or publishes no key): no
			// token can be judged, and a 401 would send the client to
			// authorize again, to no avail. The refresh goroutine and the
			// unknown-kid refetch keep trying.
			return nil, fmt.Errorf("%w: no key of the JWKS is known (it could not be fetched, or has none): %w", mcp.ErrVerifierUnavailable, err)
		}
		return nil, err
	}
	return authInfo(claims)
}

// noKeys reports whether kf holds no key at all.
func noKeys(ctx context.Context, kf keyfunc.Keyfunc) bool {
	keys, err := kf.Storage().KeyReadAll(ctx)
	return err == nil && len(keys) == 0
}

// authInfo reads what luamcp uses of a verified token's claims.
func authInfo(claims jwt.MapClaims) (*mcp.AuthInfo, error) {
	sub, _ := claims["sub"].(string)
	if sub == "" {
		return nil, errors.New("oauth: the token has no sub claim")
	}
	raw, err := json.Marshal(claims)
	if err != nil {
		return nil, fmt.Errorf("oauth: encoding the claims: %w", err)
	}
	info := &mcp.AuthInfo{Subject: sub, Claims: raw, Scopes: []string{}}
	switch s := claims["scope"].(type) {
	case string: // RFC 9068: space-separated
		info.Scopes = strings.Fields(s)
	case []any:
		info.Scopes = stringsOf(s)
	}
	if len(info.Scopes) == 0 {
		switch s := claims["scp"].(type) {
		case string: // Entra ID (Azure AD): space-separated
			info.Scopes = strings.Fields(s)
		case []any: // Okta
			info.Scopes = stringsOf(s)
		}
	}
	if id, ok := claims["client_id"].(string); ok {
		info.ClientID = id
	} else if azp, ok := claims["azp"].(string); ok {
		info.ClientID = azp
	}
	return info, nil
}

func stringsOf(list []any) []string {
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// keys returns the JWKS, discovering its URL first when the route names
// none. A failed discovery is retried after DiscoveryRetry, not per token.
func (v *Verifier) keys(ctx context.Context) (keyfunc.Keyfunc, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.kf != nil {
		return v.kf, nil
	}
	if !v.failedAt.IsZero() && time.Since(v.failedAt) < DiscoveryRetry {
		return nil, v.failErr
	}
	url := v.cfg.JWKSURL
	if url == "" {
		var err error
		// One request's cancellation must not fail discovery for the others.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
		url, err = discoverJWKS(dctx, v.client, v.cfg.Issuer)
		cancel()
		if err != nil {
			v.failedAt, v.failErr = time.Now(), fmt.Errorf("%w: %w", mcp.ErrVerifierUnavailable, err)
			return nil, v.failErr
		}
		v.logger.Info("oauth: JWKS discovered", "issuer", v.cfg.Issuer, "jwks_url", url)
	}
	kf, err := keyfunc.NewDefaultOverrideCtx(v.ctx, []string{url}, keyfunc.Override{
		Client:            v.client,
		HTTPTimeout:       fetchTimeout,
		RefreshInterval:   RefreshInterval,
		RefreshUnknownKID: v.refetch,
		RateLimitWaitMax:  fetchTimeout,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) {
				v.logger.Warn("oauth: fetching the JWKS failed", "url", u, "err", err)
			}
		},
	})
	if err != nil {
		v.failedAt, v.failErr = time.Now(), fmt.Errorf("%w: JWKS %s: %w", mcp.ErrVerifierUnavailable, url, err)
		return nil, v.failErr
	}
	v.kf = kf
	return kf, nil
}
