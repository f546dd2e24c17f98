-- churn.lua: the echo tool in session mode, for session lives that begin and
-- end all the time (/mcp/churn). Idle sessions are reaped after
-- session_ttl_ms; the benchmark sets that TTL itself with its -ttl flag.
-- They hibernate (give their Lua state back) after 1 s idle instead of the
-- default 30 s, so that the abandon and idle scenarios (which read memory
-- after -idle-wait, 2 s) see them as they sit idle for long.
return require("lib.echo")({ sessions = true, session_ttl_ms = 30000, session_hibernate_ms = 1000 })
