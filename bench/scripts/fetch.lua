-- fetch.lua: a tool that makes one HTTP request per call (mounted on
-- /mcp/fetch, session mode). The harness's upstream API answers
-- GET /item?text=T with {"text": T}; its address reaches the script through
-- the environment, and the "$BENCH_UPSTREAM" grant admits exactly that host.
local http = require("http")
local env = require("env")

local TOOLS = {
  {
    name = "fetch",
    description = "Fetch an item from the upstream API",
    input_schema = {
      type = "object",
      properties = { text = { type = "string" } },
      required = { "text" },
    },
  },
}

local base -- the upstream's URL, read on the first call

return {
  route = { sessions = true, allow = { http = { "$BENCH_UPSTREAM" }, env = { "BENCH_UPSTREAM" } } },

  init = function(params)
    base = base or (env.get("BENCH_UPSTREAM") .. "/item")
    return { name = "fetch", version = "1.0.0" }, { tools = {} }, {}
  end,

  tools = function(state)
    return TOOLS
  end,

  handle_tool = function(name, args, ctx, state)
    local res, err = http.get(base, { query = { text = args.text } })
    if not res then
      return nil, err
    end
    return res.json.text
  end,
}
