package client

import (
	"encoding/json"
	"fmt"
	"strconv"
)

type listReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *rpcError       `json:"error"`
	Result  *struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
		NextCursor *string `json:"nextCursor"`
	} `json:"result"`
}

// ListTools pages through tools/list until the last page and checks that
// the tools are exactly name(1)..name(want), each with an input schema, none
// twice. It returns the number of pages.
func (c *Client) ListTools(want int, name func(i int) string) (pages int, err error) {
	seen := make(map[string]bool, want)
	cursor := ""
	for {
		pages++
		if pages > want+1 {
			return pages, checkf("tools/list: more pages than tools")
		}
		params := []byte(`{}`)
		if cursor != "" {
			params = append(strconv.AppendQuote([]byte(`{"cursor":`), cursor), '}')
		}
		id := c.id()
		raw, err := c.call(c.request(id, "tools/list", params), id, nil)
		if err != nil {
			return pages, fmt.Errorf("tools/list page %d: %w", pages, err)
		}
		var r listReply
		if err := json.Unmarshal(raw, &r); err != nil {
			return pages, checkf("tools/list: answer is not JSON: %.200s", raw)
		}
		if err := checkEnvelope(r.JSONRPC, r.ID, id, r.Error); err != nil {
			return pages, fmt.Errorf("tools/list page %d: %w", pages, err)
		}
		if r.Result == nil {
			return pages, checkf("tools/list page %d: no result", pages)
		}
		for _, t := range r.Result.Tools {
			if seen[t.Name] {
				return pages, checkf("tools/list: %q listed twice", t.Name)
			}
			if len(t.InputSchema) == 0 {
				return pages, checkf("tools/list: %q has no inputSchema", t.Name)
			}
			seen[t.Name] = true
		}
		if r.Result.NextCursor == nil || *r.Result.NextCursor == "" {
			break
		}
		cursor = *r.Result.NextCursor
	}
	if len(seen) != want {
		return pages, checkf("tools/list: %d tools, want %d", len(seen), want)
	}
	for i := 1; i <= want; i++ {
		if !seen[name(i)] {
			return pages, checkf("tools/list: %q missing", name(i))
		}
	}
	return pages, nil
}
