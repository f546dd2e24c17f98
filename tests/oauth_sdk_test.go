package tests

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// TestOAuthGoSDKClient: the Go SDK client's own OAuth support completes the
// flow against the protected route: the 401 challenge, the route's RFC 9728
// metadata, the issuer's metadata, the authorization code flow with PKCE and
// the resource indicator, then the calls with the token; and step-up
// authorization when a tool needs a scope the first token lacks (403
// insufficient_scope). In its default mode (2026-07-28) and in a 2025-11-25
// session.
func TestOAuthGoSDKClient(t *testing.T) {
	f := startOAuthServer(t)
	for _, version := range []string{"", latestVersion} {
		t.Run("version="+version, func(t *testing.T) {
			var authorizations []string // the scope of each authorization request
			fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
				u, err := url.Parse(args.URL)
				if err != nil {
					return nil, err
				}
				if got := u.Query().Get("resource"); got != f.endpoint {
					return nil, fmt.Errorf("authorization request names resource %q, want %q", got, f.endpoint)
				}
				authorizations = append(authorizations, u.Query().Get("scope"))
				// The mock has no login page: it redirects at once with the code.
				noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
				if err != nil {
					return nil, err
				}
				res, err := noFollow.Do(req)
				if err != nil {
					return nil, err
				}
				res.Body.Close()
				loc, err := url.Parse(res.Header.Get("Location"))
				if err != nil || res.StatusCode/100 != 3 {
					return nil, fmt.Errorf("authorize: HTTP %d, Location %q", res.StatusCode, res.Header.Get("Location"))
				}
				return &auth.AuthorizationResult{Code: loc.Query().Get("code"), State: loc.Query().Get("state")}, nil
			}
			handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
				PreregisteredClient:      &oauthex.ClientCredentials{ClientID: "test-client"},
				RedirectURL:              "http://127.0.0.1:1/callback",
				AuthorizationCodeFetcher: fetch,
			})
			if err != nil {
				t.Fatal(err)
			}
			transport := &sdk.StreamableClientTransport{Endpoint: f.endpoint, OAuthHandler: handler,
				HTTPClient: &http.Client{Transport: &http.Transport{}}}
			var opts *sdk.ClientSessionOptions
			if version != "" {
				opts = &sdk.ClientSessionOptions{ProtocolVersion: version}
			}
			client := sdk.NewClient(&sdk.Implementation{Name: "oauth-e2e", Version: "1.0.0"}, nil)
			cs, err := client.Connect(goCtx(t), transport, opts)
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			defer cs.Close()

			res, err := cs.CallTool(goCtx(t), &sdk.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("whoami: %v", err)
			}
			if got, want := goText(t, res), "alice notes:read test-client "+f.as.issuer; got != want {
				t.Errorf("whoami = %q, want %q", got, want)
			}
			res, err = cs.CallTool(goCtx(t), &sdk.CallToolParams{Name: "add_note", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("add_note (step-up to notes:write): %v", err)
			}
			if got := goText(t, res); !strings.HasPrefix(got, "added ") {
				t.Errorf("add_note = %q", got)
			}
			if len(authorizations) != 2 || authorizations[0] != "notes:read" ||
				!strings.Contains(authorizations[1], "notes:write") || !strings.Contains(authorizations[1], "notes:read") {
				t.Errorf("authorization requests asked for scopes %q, want notes:read, then notes:read and notes:write", authorizations)
			}
		})
	}
}
