package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// serve under systemd: the plain protocols of sd_notify(3) (a Type=notify
// service says when it is ready, what it is doing, that it is stopping, and
// pings the watchdog) and sd_listen_fds(3) (socket activation: a .socket
// unit binds the port and passes it). Both are read from the environment
// systemd sets; without it nothing changes.

// sdNotifier sends state changes to systemd's notification socket. A nil
// *sdNotifier is "not run by systemd", and its methods do nothing.
type sdNotifier struct {
	conn   *net.UnixConn
	logger *slog.Logger

	mu     sync.Mutex // orders the datagrams; guards warned
	warned bool       // a failed send was logged: later ones are not
}

// newSDNotifier connects to $NOTIFY_SOCKET; nil when it is unset. A name
// starting with "@" is an abstract socket, which Go's net package knows.
func newSDNotifier(logger *slog.Logger) (*sdNotifier, error) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil, nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("NOTIFY_SOCKET %s: %w", path, err)
	}
	return &sdNotifier{conn: conn, logger: logger}, nil
}

// notify sends state, newline-separated assignments such as "READY=1". A
// failure is logged once: systemd going away must not stop the serving.
func (n *sdNotifier) notify(state string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.conn.Write([]byte(state)); err != nil && !n.warned {
		n.warned = true
		n.logger.Warn("systemd notification failed (further failures are not logged)", "err", err)
	}
}

// watchdog pings systemd's watchdog at half the interval it asks for
// ($WATCHDOG_USEC, for this process: $WATCHDOG_PID), until the returned
// function is called. Without a watchdog it does nothing.
func (n *sdNotifier) watchdog() (stop func()) {
	every := watchdogInterval()
	if n == nil || every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every / 2)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				n.notify("WATCHDOG=1")
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// close closes the connection to systemd.
func (n *sdNotifier) close() {
	if n != nil {
		n.conn.Close()
	}
}

// watchdogInterval is the watchdog interval systemd asks this process for,
// 0 for none.
func watchdogInterval() time.Duration {
	usec, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || usec <= 0 {
		return 0
	}
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0 // meant for another process
	}
	return time.Duration(usec) * time.Microsecond
}

// listenFDsStart is the first descriptor systemd passes (SD_LISTEN_FDS_START).
const listenFDsStart = 3

// activatedListener returns the listening TCP socket systemd passed to this
// process ($LISTEN_FDS, $LISTEN_PID), nil when it passed none. It takes the
// variables out of the environment, as sd_listen_fds(3) does, so that
// nothing this process starts takes them for its own.
func activatedListener() (net.Listener, error) {
	pid, fds := os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS")
	if pid == "" || fds == "" || pid != strconv.Itoa(os.Getpid()) {
		return nil, nil
	}
	for _, v := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
		os.Unsetenv(v)
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n != 1 {
		return nil, fmt.Errorf("socket activation: LISTEN_FDS=%s, but luamcp serves exactly one socket (one ListenStream= in the .socket unit)", fds)
	}
	f := os.NewFile(listenFDsStart, "systemd socket")
	ln, err := net.FileListener(f)
	f.Close() // FileListener made its own copy
	if err != nil {
		return nil, fmt.Errorf("socket activation: descriptor %d is not a listening socket: %w", listenFDsStart, err)
	}
	if _, ok := ln.Addr().(*net.TCPAddr); !ok {
		ln.Close()
		return nil, errors.New("socket activation: the socket passed is not a TCP socket (ListenStream= takes a port or an address with a port)")
	}
	return ln, nil
}
