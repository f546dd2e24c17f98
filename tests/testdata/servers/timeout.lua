-- A buffered caller waits 100 ms at most; the call itself runs on.
return require("lib.fixture").server({ sessions = true, request_timeout_ms = 100 })
