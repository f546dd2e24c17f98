-- One live session at most.
return require("lib.fixture").server({ sessions = true, max_sessions = 1 })
