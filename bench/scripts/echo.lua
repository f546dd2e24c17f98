-- echo.lua: the echo tool in session mode (mounted on /mcp/echo).
-- Each client's initialize starts a session with its own Lua state.
return require("lib.echo")({ sessions = true })
