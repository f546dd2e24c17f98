//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package cluster

// alive cannot peek at the socket here: a connection idle longer than
// peekAfter is not trusted, and a new one is dialled.
func (c *upstreamConn) alive() bool { return false }
