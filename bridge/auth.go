package bridge

import (
	"encoding/json"

	lua "github.com/yuin/gopher-lua"
)

// CallAuth is the verified access token of a request on a route protected by
// the route option oauth: ctx.auth in callbacks, request.auth in the auth
// hook.
type CallAuth struct {
	Subject  string
	Scopes   []string
	ClientID string          // "" when the token names none
	Claims   json.RawMessage // the token's payload
}

// AuthTable builds the Lua form of a: { subject =, scopes = { ... },
// client_id =, claims = { ... } }. Claims that do not decode (nested too
// deep) are left out rather than failing the call.
func (c *Codec) AuthTable(a *CallAuth) *lua.LTable {
	t := c.l.CreateTable(0, 4)
	t.RawSetString("subject", lua.LString(a.Subject))
	scopes := c.l.CreateTable(len(a.Scopes), 0)
	for _, s := range a.Scopes {
		scopes.Append(lua.LString(s))
	}
	t.RawSetString("scopes", scopes)
	if a.ClientID != "" {
		t.RawSetString("client_id", lua.LString(a.ClientID))
	}
	if len(a.Claims) > 0 {
		if v, err := c.Decode(a.Claims); err == nil {
			if claims, ok := v.(*lua.LTable); ok {
				t.RawSetString("claims", claims)
			}
		}
	}
	return t
}
