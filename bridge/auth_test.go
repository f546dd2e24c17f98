package bridge

import (
	"encoding/json"
	"testing"
)

func TestCtxAuth(t *testing.T) {
	tests := []struct {
		name string
		auth *CallAuth
		want string
	}{
		{"none", nil, "nil"},
		{"full", &CallAuth{Subject: "alice", Scopes: []string{"r", "w"}, ClientID: "app",
			Claims: json.RawMessage(`{"iss":"https://as","aud":["x","y"],"exp":17e8,"org":{"id":7}}`)},
			"alice, r w, app, https://as, y, 7, true"},
		{"no client, no scopes", &CallAuth{Subject: "bob", Scopes: []string{}, Claims: json.RawMessage(`{"sub":"bob"}`)},
			"bob, , nil, bob, nil, nil, true"},
		{"claims too deep", &CallAuth{Subject: "c", Claims: json.RawMessage(deepJSON(300))},
			"c, , nil, nil, nil, nil, false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.begin(CallInfo{Auth: tt.auth})
			got, err := h.run(`
				local a = ctx.auth
				if a == nil then return "nil" end
				local c = a.claims or {}
				return a.subject, table.concat(a.scopes, " "), tostring(a.client_id),
				  tostring(c.iss or c.sub), tostring(c.aud and c.aud[2]), tostring(c.org and c.org.id), tostring(a.claims ~= nil)`)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ctx.auth = %q, want %q", got, tt.want)
			}
		})
	}
}

// deepJSON is an object nested n levels deep.
func deepJSON(n int) string {
	s := "1"
	for range n {
		s = `{"a":` + s + `}`
	}
	return s
}
