package luavm

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/luamcp/luamcp/bridge"
	"github.com/luamcp/luamcp/mcp"
	lua "github.com/yuin/gopher-lua"
)

// parseOAuth reads the route option oauth (script-api.md "Protecting a
// route"): issuer and audience are required; jwks_url, algorithms, scopes
// and tool_scopes are optional. Errors name the field:
// `route.oauth.issuer must be ...`.
func parseOAuth(v lua.LValue) (*mcp.OAuth, error) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("route.oauth must be a table, got %s", describe(v))
	}
	o := &mcp.OAuth{}
	var err error
	t.ForEach(func(k, v lua.LValue) {
		if err != nil {
			return
		}
		key, ok := k.(lua.LString)
		if !ok {
			err = fmt.Errorf("route.oauth has a key that is not a string: %s", k)
			return
		}
		err = setOAuthField(o, string(key), v)
	})
	if err != nil {
		return nil, err
	}
	if o.Issuer == "" {
		return nil, fmt.Errorf("route.oauth.issuer is required (the authorization server's issuer URL)")
	}
	if o.Audience == "" {
		return nil, fmt.Errorf("route.oauth.audience is required (this route's public URL, which tokens' aud must contain)")
	}
	for tool := range o.ToolScopes {
		if !toolName.MatchString(tool) {
			return nil, fmt.Errorf("route.oauth.tool_scopes has a key %q that is not a tool name", tool)
		}
	}
	return o, nil
}

func setOAuthField(o *mcp.OAuth, key string, v lua.LValue) error {
	var err error
	switch key {
	case "issuer":
		o.Issuer, err = oauthURL("issuer", v)
	case "audience":
		o.Audience, err = oauthURL("audience", v)
	case "jwks_url":
		o.JWKSURL, err = oauthURL("jwks_url", v)
	case "scopes":
		o.Scopes, err = scopeList("oauth.scopes", v)
	case "algorithms":
		o.Algorithms, err = stringList("oauth.algorithms", v)
		for i, a := range o.Algorithms {
			if err == nil && !slices.Contains(mcp.DefaultAlgorithms, a) {
				err = fmt.Errorf("route.oauth.algorithms[%d] %q is not an asymmetric JWS algorithm (%s)", i+1, a, strings.Join(mcp.DefaultAlgorithms, ", "))
			}
		}
		if err == nil && len(o.Algorithms) == 0 {
			err = fmt.Errorf("route.oauth.algorithms must name at least one algorithm")
		}
	case "tool_scopes":
		t, ok := v.(*lua.LTable)
		if !ok {
			return fmt.Errorf("route.oauth.tool_scopes must be a table of tool name = { scopes }, got %s", describe(v))
		}
		o.ToolScopes = map[string][]string{}
		t.ForEach(func(k, v lua.LValue) {
			if err != nil {
				return
			}
			name, ok := k.(lua.LString)
			if !ok {
				err = fmt.Errorf("route.oauth.tool_scopes has a key that is not a tool name: %s", k)
				return
			}
			o.ToolScopes[string(name)], err = scopeList("oauth.tool_scopes."+string(name), v)
		})
	default:
		return fmt.Errorf("route.oauth has an unknown field %q (issuer, audience, jwks_url, algorithms, scopes, tool_scopes)", key)
	}
	return err
}

// oauthURL reads an absolute https URL; http is allowed only on a loopback
// host (a local authorization server, tests), since tokens and keys must not
// travel in the clear.
func oauthURL(field string, v lua.LValue) (string, error) {
	s, ok := v.(lua.LString)
	if !ok {
		return "", fmt.Errorf("route.oauth.%s must be a URL string, got %s", field, describe(v))
	}
	u, err := url.Parse(string(s))
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		(u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("route.oauth.%s %s must be an absolute https URL without query or fragment", field, describe(v))
	}
	if !mcp.SecureOAuthURL(u) {
		return "", fmt.Errorf("route.oauth.%s %s must use https (http only for localhost or a loopback address)", field, describe(v))
	}
	return string(s), nil
}

// scopeList reads a list of scope tokens (RFC 6749 section 3.3: printable
// ASCII without space, " or \).
func scopeList(field string, v lua.LValue) ([]string, error) {
	list, err := stringList(field, v)
	if err != nil {
		return nil, err
	}
	for i, s := range list {
		if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r > '~' || r == '"' || r == '\\' }) {
			return nil, fmt.Errorf("route.%s[%d] %q is not a scope token", field, i+1, s)
		}
	}
	return list, nil
}

// callAuth is a's bridge form (ctx.auth, request.auth); nil for nil.
func callAuth(a *mcp.AuthInfo) *bridge.CallAuth {
	if a == nil {
		return nil
	}
	return &bridge.CallAuth{Subject: a.Subject, Scopes: a.Scopes, ClientID: a.ClientID, Claims: a.Claims}
}
