package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// maxNodeID bounds a node id: it is part of every session id the node mints.
const maxNodeID = 64

// ValidNodeID reports whether id may name a node: 1 to 64 characters from
// [A-Za-z0-9_-]. Those are safe in a session id, a NATS subject token and a
// KV key, and exclude '.', which separates the node id from the rest of a
// session id.
func ValidNodeID(id string) error {
	if id == "" || len(id) > maxNodeID {
		return fmt.Errorf("node id %q must have 1 to %d characters", id, maxNodeID)
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("node id %q may hold only letters, digits, '_' and '-'", id)
		}
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
