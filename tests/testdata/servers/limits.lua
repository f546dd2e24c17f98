-- One queued request per session; callers wait 1.5 seconds.
return require("lib.fixture").server({ sessions = true, session_max_pending = 1, request_timeout_ms = 1500 })
