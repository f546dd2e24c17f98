package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

type progressNote struct {
	Method string `json:"method"`
	Params struct {
		ProgressToken json.RawMessage `json:"progressToken"`
		Progress      float64         `json:"progress"`
	} `json:"params"`
}

// Progress calls the progress tool with a progress token and checks that
// the answer streams exactly steps notifications/progress for that token,
// with increasing progress, before the result "done".
func (c *Client) Progress(token string, steps int) error {
	id := c.id()
	tok := strconv.AppendQuote(nil, token)
	p := append(c.params[:0], `{"name":"progress","arguments":{},"_meta":{"progressToken":`...)
	p = append(p, tok...)
	p = append(p, `}}`...)
	c.params = p
	n, last := 0, 0.0
	onNote := func(msg []byte) error {
		var note progressNote
		if err := json.Unmarshal(msg, &note); err != nil {
			return checkf("notification is not JSON: %.200s", msg)
		}
		switch {
		case note.Method != "notifications/progress":
			return checkf("unexpected notification %q", note.Method)
		case !bytes.Equal(note.Params.ProgressToken, tok):
			return checkf("progressToken %s, want %s", note.Params.ProgressToken, tok)
		case note.Params.Progress <= last:
			return checkf("progress %v after %v", note.Params.Progress, last)
		}
		n++
		last = note.Params.Progress
		return nil
	}
	raw, err := c.call(c.request(id, "tools/call", p), id, onNote)
	if err != nil {
		return fmt.Errorf("tools/call progress: %w", err)
	}
	if err := checkText(raw, id, []byte("done")); err != nil {
		return fmt.Errorf("tools/call progress: %w", err)
	}
	if n != steps {
		return checkf("tools/call progress: %d progress notifications, want %d (answered as %s)", n, steps, c.resp.ContentType)
	}
	return nil
}
