package edge

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certCheckEvery is how often, at most, a handshake looks whether the
// certificate files changed (a variable for tests).
var certCheckEvery = time.Second

// certSource serves the certificate of a pair of PEM files, and loads them
// again when either changes, so that a renewed certificate (certbot, a
// secret mount) is served without a restart. A pair that cannot be loaded
// (a file half written, a key for another certificate) leaves the previous
// certificate in place, and the log says why; the next change is tried
// again.
type certSource struct {
	certFile, keyFile string
	logger            *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate // never nil after newCertSource
	stamp   [2]time.Time     // the files' modification times when last loaded (or tried)
	checked time.Time        // when the stamps were last read
}

// newCertSource loads the pair once; an error names both files.
func newCertSource(certFile, keyFile string, logger *slog.Logger) (*certSource, error) {
	c := &certSource{certFile: certFile, keyFile: keyFile, logger: logger}
	c.stamp, _ = c.stamps()
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the TLS certificate (--tls-cert %s, --tls-key %s): %w", certFile, keyFile, err)
	}
	c.cert, c.checked = &cert, time.Now()
	return c, nil
}

// stamps returns the modification times of the two files.
func (c *certSource) stamps() ([2]time.Time, error) {
	var st [2]time.Time
	for i, f := range []string{c.certFile, c.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return st, err
		}
		st[i] = fi.ModTime()
	}
	return st, nil
}

// get is tls.Config.GetCertificate.
func (c *certSource) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if now.Sub(c.checked) < certCheckEvery {
		return c.cert, nil
	}
	c.checked = now
	st, err := c.stamps()
	if err != nil || st == c.stamp {
		return c.cert, nil // a file being replaced may be missing for a moment
	}
	c.stamp = st
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		c.logger.Warn("the TLS certificate files changed but cannot be loaded: the previous certificate is still served", "cert", c.certFile, "key", c.keyFile, "err", err)
		return c.cert, nil
	}
	c.cert = &cert
	c.logger.Info("TLS certificate reloaded", "cert", c.certFile)
	return c.cert, nil
}
