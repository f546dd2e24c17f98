-- live.lua: the push API. A server can talk to clients while a tool runs
-- (progress, logs, questions) and between calls (notifications), and a long
-- tool can answer at once with a task the client polls (report).
--
-- Messages about a running call travel on that call's own answer, which
-- turns from plain JSON into an event stream when the first one is sent.
-- Notifications outside a call go to the session's GET stream, the channel
-- a client opens with GET on the route after initialize.

local mcp = require("mcp")

return {
  -- Every call of a session runs in turn on its state, so a 10-second
  -- countdown would hold up the session's other calls. countdown only reads
  -- the state, so it is listed in concurrent_tools: its calls run on a copy
  -- of the state, beside the session's other calls, and whatever they change
  -- there is dropped.
  route = { sessions = true, concurrent_tools = { "countdown" } },

  -- listChanged tells clients that the tool list may change (see unlock_die).
  -- Capabilities are sent exactly as written, so their keys are camelCase.
  init = function(params)
    local capabilities = { tools = { listChanged = true }, logging = {} }
    return { name = "live", version = "1.0.0" }, capabilities, { unlocked = false }
  end,

  -- Every session joins the "room" channel, where shout broadcasts.
  channels = function(state)
    return { "room" }
  end,

  tools = function(state)
    local list = {
      {
        name = "countdown",
        description = "Count down from `from` (1 to 10, default 3), one step a second, with progress",
        input_schema = { type = "object", properties = { from = { type = "integer", minimum = 1, maximum = 10 } } },
      },
      {
        name = "shout",
        description = "Send a message to every session of this server",
        input_schema = {
          type = "object",
          properties = { message = { type = "string" } },
          required = { "message" },
        },
      },
      {
        name = "ask_name",
        description = "Ask the user for their name (needs a client that supports elicitation)",
        input_schema = { type = "object" },
      },
      {
        name = "unlock_die",
        description = "Add a roll_die tool to this session",
        input_schema = { type = "object" },
      },
      {
        name = "report",
        description = "Write a report that takes `seconds` seconds (default 5); a task for clients that poll",
        input_schema = { type = "object", properties = { seconds = { type = "integer", minimum = 0, maximum = 60 } } },
        -- This tool may run as a task (the 2026-07-28 tasks extension).
        execution = { taskSupport = "optional" },
      },
    }
    -- The list can depend on the session's state.
    if state.unlocked then
      list[#list + 1] = { name = "roll_die", description = "Roll a six-sided die", input_schema = { type = "object" } }
    end
    return list
  end,

  handle_tool = function(name, args, ctx, state)
    if name == "countdown" then
      local from = args.from or 3
      if type(from) ~= "number" or from ~= math.floor(from) or from < 1 or from > 10 then
        return nil, "from must be an integer from 1 to 10"
      end
      for done = 0, from - 1 do
        -- Progress reaches the client only when it asked for it (a
        -- progressToken in the call's _meta) and accepts an event stream;
        -- otherwise mcp.progress does nothing, so call it unconditionally.
        mcp.progress(ctx, done, { total = from, message = (from - done) .. "..." })
        -- A log message for this call, dropped below the level the client
        -- set with logging/setLevel (default "info").
        mcp.log(ctx, "info", "countdown: " .. (from - done) .. " to go")
        -- mcp.sleep waits without holding up other sessions. When the
        -- client cancels the call, the wait ends and so does the call.
        mcp.sleep(1000)
      end
      mcp.progress(ctx, from, { total = from, message = "liftoff" })
      return "Liftoff!"
    end

    if name == "shout" then
      if type(args.message) ~= "string" or args.message == "" then
        return nil, "message must be a non-empty string"
      end
      -- Every session that joined "room" gets this on its GET stream, the
      -- caller's own included. notifications/message is what clients show
      -- as a log line.
      mcp.broadcast("room", "notifications/message", {
        level = "notice",
        logger = "shout",
        data = { from = ctx.session_id, message = args.message },
      })
      return "shouted"
    end

    if name == "ask_name" then
      -- A request to the client: the call waits for the user's answer (or
      -- for cancellation, or request_timeout_ms). Without the client's
      -- elicitation capability it fails in-band with a message.
      local answer, err = mcp.elicit(ctx, {
        message = "What is your name?",
        requested_schema = {
          type = "object",
          properties = { name = { type = "string" } },
          required = { "name" },
        },
      })
      if not answer then
        return nil, err
      end
      if answer.action ~= "accept" then
        return "You did not tell me (" .. tostring(answer.action) .. ")."
      end
      return "Nice to meet you, " .. tostring(answer.content.name) .. "!"
    end

    if name == "unlock_die" then
      state.unlocked = true
      -- A notification to one session, by id: here the caller's own. Its
      -- client re-lists the tools and finds roll_die.
      mcp.notify(ctx.session_id, "notifications/tools/list_changed", {})
      return "roll_die is now available"
    end

    if name == "report" then
      local seconds = args.seconds or 5
      if type(seconds) ~= "number" or seconds ~= math.floor(seconds) or seconds < 0 or seconds > 60 then
        return nil, "seconds must be an integer from 0 to 60"
      end
      -- A client that polls (it declared the tasks extension) gets a task
      -- id right here and asks tasks/get for the result later; for any other
      -- client mcp.task returns false and the call simply runs to its end.
      mcp.task(ctx)
      mcp.sleep(seconds * 1000)
      return "Report ready after " .. seconds .. " seconds"
    end

    if name == "roll_die" then
      return tostring(math.random(1, 6))
    end
  end,
}
