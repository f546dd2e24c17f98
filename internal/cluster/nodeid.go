package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/luamcp/luamcp/mcp"
)

// ValidNodeID returns an error unless id may name a node ([mcp.ValidNodeID]:
// 1 to 64 characters of [A-Za-z0-9_-]).
func ValidNodeID(id string) error {
	if !mcp.ValidNodeID(id) {
		return fmt.Errorf("node id %q must have 1 to 64 characters, each a letter, a digit, '_' or '-'", id)
	}
	return nil
}

// DefaultNodeID derives a node id from the host name (its first label, cut
// to the allowed characters) plus 6 random hex digits, so that two processes
// on one machine still differ.
func DefaultNodeID() string {
	name, _ := os.Hostname()
	name, _, _ = strings.Cut(name, ".")
	var b strings.Builder
	for _, c := range []byte(name) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteByte(c)
		}
		if b.Len() == 40 {
			break
		}
	}
	if b.Len() == 0 {
		b.WriteString("node")
	}
	var r [3]byte
	_, _ = rand.Read(r[:])
	return b.String() + "-" + hex.EncodeToString(r[:])
}
