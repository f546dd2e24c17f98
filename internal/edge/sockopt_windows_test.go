package edge

import "syscall"

// setRecvBuffer sets a socket's receive buffer (SO_RCVBUF).
func setRecvBuffer(fd uintptr, n int) error {
	return syscall.SetsockoptInt(syscall.Handle(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}
