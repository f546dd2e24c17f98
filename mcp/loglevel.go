package mcp

// logLevels are the MCP (syslog) log levels in ascending severity; a level's
// index is its severity.
var logLevels = [...]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// defaultLogLevel is the minimum severity a session starts with ("info").
const defaultLogLevel = 1

// levelSeverity returns the severity (0..7) of a level name, or -1.
func levelSeverity(level string) int {
	for i, l := range logLevels {
		if l == level {
			return i
		}
	}
	return -1
}

// ValidLogLevel reports whether level is one of debug, info, notice, warning,
// error, critical, alert and emergency.
func ValidLogLevel(level string) bool { return levelSeverity(level) >= 0 }
