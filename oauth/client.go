package oauth

import (
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/luamcp/luamcp/mcp"
)

// newClient returns the client a verifier fetches metadata and keys with: a
// copy of c (nil: a client with fetchTimeout) whose response bodies fail past
// maxJWKSBytes and whose redirects keep to the rule of secureURL and never
// leave https. c itself is not changed.
func newClient(c *http.Client) *http.Client {
	if c == nil {
		c = &http.Client{Timeout: fetchTimeout}
	}
	cc := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cc.Transport = &boundedTransport{base: base, max: maxJWKSBytes}
	next := c.CheckRedirect
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		// Checked at every hop, so once on https a chain stays there.
		if prev := via[len(via)-1].URL; prev.Scheme == "https" && req.URL.Scheme != "https" {
			return fmt.Errorf("oauth: redirect from %s to %s leaves https", prev.Redacted(), req.URL.Redacted())
		}
		if !secureURL(req.URL.String()) {
			return fmt.Errorf("oauth: redirect to %s: must be https (http only on a loopback host)", req.URL.Redacted())
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 { // http.Client's own limit, which a CheckRedirect replaces
			return fmt.Errorf("oauth: stopped after 10 redirects")
		}
		return nil
	}
	return &cc
}

// boundedTransport makes reading a response body fail once it passes max
// bytes. jwkset decodes the JWKS straight from the body, so without it a
// hostile or broken JWKS host makes the verifier hold whatever it sends.
type boundedTransport struct {
	base http.RoundTripper
	max  int64
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	res.Body = &boundedBody{ReadCloser: res.Body, left: t.max,
		tooLarge: fmt.Errorf("oauth: %s: response body larger than %d bytes", req.URL.Redacted(), t.max)}
	return res, nil
}

// boundedBody is a response body whose reads fail once it has passed its
// bound.
type boundedBody struct {
	io.ReadCloser
	left     int64 // bytes still allowed
	tooLarge error
	err      error // tooLarge, once the body went past the bound
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	// One byte more than allowed tells a body that ends at the bound from
	// a longer one.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		n, b.left, b.err = int(b.left), 0, b.tooLarge
		return n, b.err
	}
	b.left -= int64(n)
	return n, err
}

// secureURL reports whether tokens and keys may travel to or from the URL
// s (mcp.SecureOAuthURL), which must be absolute.
func secureURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Host != "" && mcp.SecureOAuthURL(u)
}
