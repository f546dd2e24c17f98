-- Idle sessions are reaped after 100 ms.
return require("lib.fixture").server({ sessions = true, session_ttl_ms = 100 })
