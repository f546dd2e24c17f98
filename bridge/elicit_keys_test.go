package bridge

import (
	"context"
	"encoding/json"
	"testing"
)

// TestElicitRenamesKeys: mcp.elicit renames elicitation_id as it does
// requested_schema (script-api.md, "Requests to the client"); other
// snake_case keys pass as written.
func TestElicitRenamesKeys(t *testing.T) {
	h := newHarness(t)
	h.line.answer = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"action":"accept"}`), nil
	}
	h.begin(CallInfo{RequestID: json.RawMessage(`1`)})
	h.mustRun(t, `return mcp.elicit(ctx, {mode = "url", message = "m", url = "https://x", elicitation_id = "e1", other_key = 1}).action`)
	equal(t, "line", h.line.events, []string{
		`request elicitation/create {"elicitationId":"e1","message":"m","mode":"url","other_key":1,"url":"https://x"}`,
	})
}
