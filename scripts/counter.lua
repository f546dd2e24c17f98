-- counter.lua: a server with sessions, and how state moves between calls.
--
-- With route.sessions = true, `initialize` starts a session: the answer
-- carries an Mcp-Session-Id header that the client sends on every later
-- request. init runs once per session and its third result, the state, lives
-- on in the session: every callback gets it as `state`.

return {
  route = { sessions = true },

  -- params are the client's initialize params; params.mcp_session_id is the
  -- new session's id. (luamcp also runs init({}) once at start to print the
  -- tools, so params may be empty.)
  init = function(params)
    return { name = "counter", version = "1.0.0" }, { tools = {} }, { count = 0, id = params.mcp_session_id }
  end,

  tools = function(state)
    return {
      {
        name = "increment",
        description = "Add n (default 1) to the counter and return the new value",
        input_schema = { type = "object", properties = { n = { type = "integer" } } },
      },
      { name = "get", description = "Return the counter", input_schema = { type = "object" } },
      { name = "reset", description = "Set the counter back to 0", input_schema = { type = "object" } },
    }
  end,

  handle_tool = function(name, args, ctx, state)
    if name == "increment" then
      local n = args.n or 1
      if type(n) ~= "number" or n ~= math.floor(n) then
        -- An in-band error keeps the state as the callback left it (here
        -- untouched), just like a result does.
        return nil, "n must be an integer"
      end
      -- Changing the state in place is enough: when a callback returns no
      -- new state, the table it was given stays.
      state.count = state.count + n
      -- If anything below raised an error (a bug, error(...), a timeout),
      -- the call would be a crash: the client gets "Internal error" and the
      -- session's state goes back to exactly what it was before this call,
      -- so a crash never leaves a half-done change behind.
      return tostring(state.count)
    end

    if name == "get" then
      return tostring(state.count)
    end

    if name == "reset" then
      -- A callback can also hand back a whole new state after its result.
      return "0", { count = 0, id = state.id }
    end
  end,

  -- terminate runs when the session ends: reason "normal" after DELETE or
  -- idle expiry, "shutdown" when the server stops. Its result is ignored.
  terminate = function(reason, state)
    -- print writes to the server log, tagged with the script name.
    print("session " .. state.id .. " ended (" .. reason .. ") with count " .. state.count)
  end,
}
