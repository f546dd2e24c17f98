-- hello.lua: the smallest useful MCP server, and a tour of tool results.
--
-- Every *.lua file in the scripts folder is one MCP server. This one is
-- mounted at /mcp/hello (the file name) and is stateless, the default: each
-- request starts from a fresh init({}), so nothing is remembered between
-- calls. See counter.lua for a server that remembers.
--
-- A script returns a table of callbacks; init, tools and handle_tool are
-- the required ones.

local text = require("lib.text") -- a module from scripts/lib/, not a server

return {
  -- init(params) returns who we are, what we can do, and a state table.
  -- `instructions` tells the client's model how to use this server.
  init = function(params)
    local info = {
      name = "hello",
      version = "1.0.0",
      instructions = "Use greet to say hello and add to add two numbers.",
    }
    return info, { tools = {} }, {}
  end,

  -- tools(state) lists the tools. input_schema is a JSON Schema; snake_case
  -- keys such as input_schema become the wire's inputSchema.
  tools = function(state)
    return {
      {
        name = "greet",
        description = "Greet someone by name",
        input_schema = {
          type = "object",
          properties = { name = { type = "string", description = "Who to greet" } },
          required = { "name" },
        },
      },
      {
        name = "add",
        description = "Add two numbers",
        input_schema = {
          type = "object",
          properties = { a = { type = "number" }, b = { type = "number" } },
          required = { "a", "b" },
        },
        -- With an output schema, clients can read the result as data.
        output_schema = {
          type = "object",
          properties = { sum = { type = "number" } },
          required = { "sum" },
        },
      },
    }
  end,

  -- handle_tool runs a call. It is only called with a name tools() listed;
  -- args is the decoded JSON arguments object. Arguments are not checked
  -- against the schema unless the route sets validate_arguments = true, so
  -- check what you rely on.
  handle_tool = function(name, args, ctx, state)
    if name == "greet" then
      local who = type(args.name) == "string" and text.trim(args.name) or ""
      if who == "" then
        -- nil, message is an in-band failure: the client gets a result with
        -- isError = true that its model can read and react to.
        return nil, "Please tell me a name to greet."
      end
      -- A string is one text block.
      return "Hello, " .. who .. "!"
    end

    if name == "add" then
      if type(args.a) ~= "number" or type(args.b) ~= "number" then
        return nil, "a and b must both be numbers."
      end
      local sum = args.a + args.b
      -- A table gives the content blocks, and structured_content the data
      -- that matches output_schema.
      return {
        content = { { type = "text", text = tostring(sum) } },
        structured_content = { sum = sum },
      }
    end
  end,
}
