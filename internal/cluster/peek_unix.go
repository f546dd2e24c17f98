//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cluster

import "syscall"

// alive reports whether the node has neither closed c nor sent anything on
// it while it was idle, with one non-blocking peek at the socket: nothing to
// read (EAGAIN) is alive; an end of stream, an error, or bytes (a node says
// nothing between answers) are not.
func (c *upstreamConn) alive() bool {
	sc, ok := c.raw.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, perr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = perr == syscall.EAGAIN || perr == syscall.EWOULDBLOCK
		return true // never wait for the socket
	})
	return err == nil && alive
}
