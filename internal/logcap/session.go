package logcap

import (
	"crypto/sha256"
	"encoding/hex"
)

// Session is what a log line says of a session id: the first 12 hex digits
// of its SHA-256, or "" for none. A session id is a credential (whoever
// holds it speaks as the session), and logs are read by more people than
// the clients: they can follow a session by its tag without being able to
// take it over.
func Session(id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}
