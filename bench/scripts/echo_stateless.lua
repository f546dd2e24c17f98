-- echo_stateless.lua: the echo tool in stateless mode (/mcp/echo_stateless).
-- No session: every request runs init({}) and then the call on a warm state.
return require("lib.echo")({})
