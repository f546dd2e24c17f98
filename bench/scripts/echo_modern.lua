-- echo_modern.lua: the echo tool for the 2026-07-28 scenario (/mcp/echo_modern).
-- The same script as echo_stateless.lua: luamcp serves both eras on every
-- route, and a new-era request runs init({}) and then the call, as a
-- stateless one does.
return require("lib.echo")({})
