-- No keep-alive comments on the GET channel.
return require("lib.fixture").server({ sessions = true, session_keepalive_ms = 0 })
