package edge

import (
	"log"
	"log/slog"
	"strings"
	"time"

	"github.com/luamcp/luamcp/internal/logcap"
)

// serverLog is where net/http's own error lines go (http.Server.ErrorLog):
// each becomes a warning, except a failed TLS handshake, which any client
// makes at will (plain HTTP to the HTTPS port, a port scanner, a client
// that does not trust the certificate and hangs up): those are logged at
// most once per logcap.Every, with the count of the ones held back, so
// that a flood of bad handshakes is no flood of the log.
type serverLog struct {
	logger     *slog.Logger
	handshakes logcap.Throttle
}

// newServerLog returns the ErrorLog of a server that logs to logger.
func newServerLog(logger *slog.Logger) *log.Logger {
	return log.New(&serverLog{logger: logger}, "", 0)
}

func (l *serverLog) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	if !strings.HasPrefix(msg, "http: TLS handshake error") {
		l.logger.Warn(msg)
		return len(p), nil
	}
	if ok, held := l.handshakes.Allow(time.Now(), logcap.Every); ok {
		l.logger.Warn(msg, "unlogged_since_last", held)
	}
	return len(p), nil
}
