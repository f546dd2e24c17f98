-- The session fixture again, on another route (/mcp/other): pushes of one
-- route must not reach the other's sessions.
return require("lib.fixture").server({ sessions = true })
