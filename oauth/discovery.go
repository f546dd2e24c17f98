package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

const (
	// maxMetadataBytes bounds an authorization server's metadata document.
	maxMetadataBytes = 1 << 20
	// maxJWKSBytes bounds a JWKS document (a set of a few dozen keys is a
	// few KiB). jwkset reads the body itself, so the client's transport
	// enforces it (boundedTransport).
	maxJWKSBytes = 1 << 20
)

// discoverJWKS finds the issuer's jwks_uri in its metadata: RFC 8414's
// /.well-known/oauth-authorization-server first, then OpenID Connect
// discovery's /.well-known/openid-configuration, each in the forms the MCP
// specification lists for an issuer with a path. The document's issuer must
// be the issuer itself, character for character (RFC 8414 section 3.3).
func discoverJWKS(ctx context.Context, client *http.Client, issuer string) (string, error) {
	var errs []error
	for _, u := range metadataURLs(issuer) {
		jwks, err := fetchJWKSURI(ctx, client, u, issuer)
		if err == nil {
			return jwks, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", fmt.Errorf("oauth: discovering the JWKS of %s: %w", issuer, errors.Join(errs...))
}

// metadataURLs lists where an issuer's metadata may be, in the order the MCP
// specification (2025-11-25, "Authorization Server Metadata Discovery") asks
// clients to try.
func metadataURLs(issuer string) []string {
	issuer = strings.TrimSuffix(issuer, "/")
	scheme, rest, _ := strings.Cut(issuer, "://")
	host, path, _ := strings.Cut(rest, "/")
	origin := scheme + "://" + host
	if path == "" {
		return []string{
			origin + "/.well-known/oauth-authorization-server",
			origin + "/.well-known/openid-configuration",
		}
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server/" + path,
		origin + "/.well-known/openid-configuration/" + path,
		issuer + "/.well-known/openid-configuration",
	}
}

func fetchJWKSURI(ctx context.Context, client *http.Client, url, issuer string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: HTTP %d", url, res.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxMetadataBytes))
	if err != nil {
		return "", fmt.Errorf("%s: %w", url, err)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", url, err)
	}
	// Identical, as RFC 8414 section 3.3 requires, a terminating "/"
	// included: the tokens' iss is compared with the route's issuer as it
	// is written, so a document that names its issuer otherwise means that
	// every token would be refused, with nothing to say why.
	if doc.Issuer != issuer {
		return "", fmt.Errorf("%s: its issuer %q is not %q (route.oauth.issuer must be the authorization server's issuer exactly, as its tokens' iss)", url, doc.Issuer, issuer)
	}
	// The same rule as for a jwks_url the route names: keys that travel in
	// the clear can be swapped for an attacker's.
	if !secureURL(doc.JWKSURI) {
		return "", fmt.Errorf("%s: jwks_uri %q is not an https URL (http only on a loopback host)", url, doc.JWKSURI)
	}
	return doc.JWKSURI, nil
}
