-- Idle sessions are reaped after 300 ms.
return require("lib.fixture").server({ sessions = true, session_ttl_ms = 300 })
