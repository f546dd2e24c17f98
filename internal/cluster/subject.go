package cluster

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// pubsubPrefix starts the subject of every pubsub channel; the channel name
// follows as one token.
const pubsubPrefix = "luamcp.ps."

// channelSubject returns the NATS subject of a pubsub channel. Channel names
// carry route paths and resource URIs, which may hold '.', '*', '>', spaces
// and anything else, so the name travels base64url-encoded (alphabet
// [A-Za-z0-9_-], all safe in a subject token); the leading "b" keeps the token
// non-empty for an empty name.
func channelSubject(channel string) string {
	return pubsubPrefix + "b" + base64.RawURLEncoding.EncodeToString([]byte(channel))
}

// subjectChannel inverts channelSubject.
func subjectChannel(subject string) (string, error) {
	tok, ok := strings.CutPrefix(subject, pubsubPrefix+"b")
	if !ok {
		return "", fmt.Errorf("cluster: subject %q is not a pubsub channel", subject)
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", fmt.Errorf("cluster: subject %q: %w", subject, err)
	}
	return string(b), nil
}
