-- Every route option set.
return {
  route = {
    path = "/custom", sessions = true, origins = { "http://localhost:3000" },
    allow_remote_access = true, page_size = 7, max_sessions = 3, session_ttl_ms = 1500,
    request_timeout_ms = 2500, session_max_pending = 9, session_keepalive_ms = 0,
    session_buffer_max = 11, concurrent_tools = { "countdown", "a.b-c_d" }, memory_limit_mb = 32,
    cache_ttl_ms = 60000, cache_scope = "public", session_hibernate_ms = 0,
  },
  auth = function() return true end,
  init = function() return { name = "m", version = "1" }, {}, {} end,
  tools = function() return {} end,
  handle_tool = function() end,
}
