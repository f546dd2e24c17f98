-- A fast keep-alive and a two-event replay buffer on the GET channel.
return require("lib.fixture").server({ sessions = true, session_keepalive_ms = 50, session_buffer_max = 2 })
