package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// This file is the route's OAuth 2.1 resource-server side (MCP 2025-11-25
// "Authorization"): the bearer-token gate with its WWW-Authenticate
// challenges, the RFC 9728 protected-resource metadata document, the binding
// of a session to its subject and the per-tool scopes. Verifying a token is
// not the transport's job: Options.Verifier does it (package oauth verifies
// JWTs against the issuer's JWKS).

// OAuth is the route option oauth: the route accepts only requests that carry
// a bearer token its Verifier accepts.
type OAuth struct {
	// Issuer is the authorization server's issuer identifier (the iss
	// claim, and where its metadata and JWKS are discovered).
	Issuer string
	// Audience is the resource: the route's canonical URL, which a token's
	// aud claim must contain (RFC 8707), and the metadata's "resource".
	Audience string
	// JWKSURL is where the signing keys are; "" discovers it from the
	// issuer's metadata (RFC 8414, then OpenID Connect discovery).
	JWKSURL string
	// Algorithms is the allowlist of JWS algorithms; nil means
	// DefaultAlgorithms.
	Algorithms []string
	// Scopes are needed by every request of the route.
	Scopes []string
	// ToolScopes names, per tool, the scopes a tools/call of it needs on top
	// of Scopes.
	ToolScopes map[string][]string
}

// DefaultAlgorithms are the JWS algorithms an [OAuth] route accepts unless it
// names its own: the asymmetric ones (a JWKS publishes public keys; "none"
// and the HMAC family are never accepted).
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// scopesSupported lists every scope the route names, sorted, once each.
func (o *OAuth) scopesSupported() []string {
	list := slices.Clone(o.Scopes)
	for _, s := range o.ToolScopes {
		list = append(list, s...)
	}
	slices.Sort(list)
	return slices.Compact(list)
}

// AuthInfo is what a verified access token says about its bearer. Callbacks
// see it as ctx.auth, the auth hook as request.auth.
type AuthInfo struct {
	// Subject is the token's sub claim; a session belongs to the subject
	// that opened it.
	Subject string
	// Scopes are the granted scopes (the scope claim, or scp).
	Scopes []string
	// ClientID is the client_id (or azp) claim; "" when absent.
	ClientID string
	// Claims is the token's whole payload, as JSON.
	Claims json.RawMessage
}

// hasScopes reports whether every scope of need was granted.
func (a *AuthInfo) hasScopes(need []string) bool {
	for _, s := range need {
		if !slices.Contains(a.Scopes, s) {
			return false
		}
	}
	return true
}

// TokenVerifier checks an access token for a route. An error means the token
// is refused (401 invalid_token); its text is logged, never sent.
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (*AuthInfo, error)
}

// ErrVerifierUnavailable is wrapped by a TokenVerifier's error when it could
// not judge the token (the authorization server's keys cannot be had): the
// request gets 503 rather than a challenge.
var ErrVerifierUnavailable = errors.New("token verifier unavailable")

// WellKnownProtectedResource is the RFC 9728 path prefix of a
// protected-resource metadata document; a route's own document is at this
// prefix followed by its path.
const WellKnownProtectedResource = "/.well-known/oauth-protected-resource"

// MetadataPath is the path of the metadata document of the route served on
// path (RFC 9728 section 3.1: the well-known prefix, then the resource's
// path; "/" has none).
func MetadataPath(path string) string {
	if path == "/" {
		return WellKnownProtectedResource
	}
	return WellKnownProtectedResource + path
}

type authKey struct{}

// AuthFromContext returns the verified token of the request ctx belongs to,
// or nil on a route without oauth.
func AuthFromContext(ctx context.Context) *AuthInfo {
	a, _ := ctx.Value(authKey{}).(*AuthInfo)
	return a
}

// authenticate runs the oauth gate. It returns the token's AuthInfo, or nil
// after writing the refusal: 400 for a token in the query string, 401 with a
// challenge for a missing or invalid token, 403 insufficient_scope when the
// route's scopes are not all granted, 503 when the verifier cannot judge.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) *AuthInfo {
	o := h.opts.OAuth
	if r.URL.Query().Has("access_token") {
		// MCP: tokens MUST NOT be sent in the URI query string (they end up in
		// logs and Referer headers).
		h.challenge(w, r, http.StatusBadRequest, `error="invalid_request", error_description="access tokens are not accepted in the query string"`)
		return nil
	}
	token, ok := bearerToken(r.Header.Values("Authorization"))
	if !ok {
		h.challenge(w, r, http.StatusUnauthorized, "")
		return nil
	}
	if h.opts.Verifier == nil {
		h.log.Error("mcp: route has oauth but no token verifier")
		h.refused(GateOAuth)
		w.WriteHeader(http.StatusInternalServerError)
		return nil
	}
	info, err := h.opts.Verifier.Verify(r.Context(), token)
	if err != nil {
		if errors.Is(err, ErrVerifierUnavailable) {
			// Any bearer string gets here while the authorization server
			// is down: throttled, or a flood of them floods the log.
			h.warnThrottled(&h.verifierWarn, "mcp: cannot verify access tokens", "err", err)
			h.refused(GateOAuth)
			w.WriteHeader(http.StatusServiceUnavailable)
			return nil
		}
		h.log.Debug("mcp: access token refused", "err", err)
		h.challenge(w, r, http.StatusUnauthorized, `error="invalid_token", error_description="the access token is invalid"`)
		return nil
	}
	if !info.hasScopes(o.Scopes) {
		h.challenge(w, r, http.StatusForbidden, `error="insufficient_scope"`)
		return nil
	}
	return info
}

// bearerToken returns the token of an "Authorization: Bearer <token>" header
// (the scheme is case-insensitive); ok is false for none, several, or another
// scheme.
func bearerToken(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	scheme, token, found := strings.Cut(strings.TrimSpace(values[0]), " ")
	token = strings.TrimSpace(token)
	if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// challenge refuses r with status and a Bearer WWW-Authenticate challenge
// naming the route's metadata document and the scopes it needs. extra holds
// the error parameters (RFC 6750 section 3), or "".
func (h *Handler) challenge(w http.ResponseWriter, r *http.Request, status int, extra string) {
	h.challengeScopes(w, r, status, extra, h.opts.OAuth.Scopes)
}

func (h *Handler) challengeScopes(w http.ResponseWriter, r *http.Request, status int, extra string, scopes []string) {
	h.refused(GateOAuth)
	h.setChallenge(w, r, extra, scopes)
	w.WriteHeader(status)
}

// setChallenge sets the Bearer WWW-Authenticate challenge of a refusal:
// extra (the error parameters, or ""), the route's metadata document and
// the scopes to ask for.
func (h *Handler) setChallenge(w http.ResponseWriter, r *http.Request, extra string, scopes []string) {
	var b strings.Builder
	b.WriteString("Bearer ")
	if extra != "" {
		b.WriteString(extra)
		b.WriteString(", ")
	}
	b.WriteString(`resource_metadata="`)
	b.WriteString(h.metadataURL(r))
	b.WriteByte('"')
	if len(scopes) > 0 {
		b.WriteString(`, scope="`)
		b.WriteString(strings.Join(scopes, " "))
		b.WriteByte('"')
	}
	w.Header().Set("WWW-Authenticate", b.String())
}

// msgHookRefusedToken is the error_description of the challenge of a 401 the
// auth hook answered on an oauth route: the token is valid, but not for the
// hook's rules.
const msgHookRefusedToken = `error="invalid_token", error_description="the access token is not accepted by this route"`

// metadataURL is the absolute URL of the route's metadata document, on the
// scheme and host the request reached (the entry node's, in a cluster). A
// request that reached the audience's own host over http came through a
// proxy that ended TLS in front of luamcp (the audience is https but on
// loopback): the client fetches the document over https, as it reached
// the route, so the URL says https.
func (h *Handler) metadataURL(r *http.Request) string {
	scheme := requestScheme(r)
	if scheme == "http" {
		if u, err := url.Parse(h.opts.OAuth.Audience); err == nil && u.Scheme == "https" && strings.EqualFold(u.Host, r.Host) {
			scheme = "https"
		}
	}
	// Escaped: a route path may hold what a URL must escape ("%", '"', a
	// space), and the URL sits in a quoted parameter of the challenge.
	return (&url.URL{Scheme: scheme, Host: r.Host, Path: MetadataPath(h.opts.Path)}).String()
}

// checkToolScopes refuses a tools/call whose tool needs scopes the token
// lacks: 403 insufficient_scope naming every scope the call needs. It
// reports whether the request may go on.
func (h *Handler) checkToolScopes(w http.ResponseWriter, r *http.Request, m *message) bool {
	info := AuthFromContext(r.Context())
	if info == nil || m.method != methodToolsCall || len(h.opts.OAuth.ToolScopes) == 0 {
		return true
	}
	name, ok := stringMember(m.params, "name")
	if !ok {
		return true // the dispatcher refuses it
	}
	need := h.opts.OAuth.ToolScopes[name]
	if info.hasScopes(need) {
		return true
	}
	all := append(slices.Clone(h.opts.OAuth.Scopes), need...)
	h.challengeScopes(w, r, http.StatusForbidden, `error="insufficient_scope"`, all)
	return false
}

// ownedBy reports whether the request r may use session s: on an oauth
// route a session belongs to the subject of the token that opened it.
func ownedBy(s *session, r *http.Request) bool {
	info := AuthFromContext(r.Context())
	if info == nil {
		return s.subject == ""
	}
	return info.Subject == s.subject
}

// msgNotYourSession refuses a request whose token's subject is not the
// session's.
const msgNotYourSession = "Forbidden: the session belongs to another subject"

// ServeMetadata serves the route's RFC 9728 protected-resource metadata
// document (GET, HEAD), and the CORS preflight for it (OPTIONS): browser
// clients read it from other origins. On a route without oauth it answers
// 404.
func (h *Handler) ServeMetadata(w http.ResponseWriter, r *http.Request) {
	o := h.opts.OAuth
	if o == nil {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd.Set("Access-Control-Allow-Origin", "*")
	hd.Set("Access-Control-Allow-Methods", "GET, OPTIONS")
	hd.Set("Access-Control-Allow-Headers", "Authorization, MCP-Protocol-Version")
	switch r.Method {
	case http.MethodOptions:
		hd.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet, http.MethodHead:
	default:
		hd.Set("Allow", "GET, HEAD, OPTIONS")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	doc := struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		ScopesSupported        []string `json:"scopes_supported,omitempty"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
	}{o.Audience, []string{o.Issuer}, o.scopesSupported(), []string{"header"}}
	body, _ := json.Marshal(doc) // strings only: cannot fail
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "max-age=3600")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// SecureOAuthURL reports whether tokens and keys may travel to or from u:
// over https, or over http only to a loopback host (a local test server).
// Route options, discovered key URLs and the redirects followed to fetch
// them all keep to it.
func SecureOAuthURL(u *url.URL) bool {
	switch u.Scheme {
	case "https":
		return true
	case "http":
		host := u.Hostname()
		if strings.EqualFold(host, "localhost") {
			return true
		}
		ip, err := netip.ParseAddr(host)
		return err == nil && ip.IsLoopback()
	}
	return false
}
