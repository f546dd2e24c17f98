-- churn.lua: the echo tool in session mode, for session lives that begin and
-- end all the time (/mcp/churn). Idle sessions are reaped after
-- session_ttl_ms; the benchmark sets that TTL itself with its -ttl flag.
return require("lib.echo")({ sessions = true, session_ttl_ms = 30000 })
