package edge

// DefaultMaxConnections returns the cap used when Config.MaxConnections is 0.
// A Windows process has no open-file limit (sockets are handles, millions of
// them), so the cap bounds memory only.
func DefaultMaxConnections() int {
	return unlimitedMaxConnections
}
