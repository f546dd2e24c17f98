-- Results whose content blocks, resource contents and prompt messages miss
-- what the MCP schema requires (TestResultBlocks). Each tool call counts in
-- the state first: a crash rolls the count back.
local results = {
  all_kinds = { content = {
    { type = "text", text = "t", annotations = { priority = 1 }, _meta = { k = 1 }, mine = true },
    { type = "image", data = "aGk=", mimeType = "image/png" },
    { type = "audio", data = "aGk=", mimeType = "audio/wav" },
    { type = "resource_link", uri = "r://x", name = "x", size = 2 },
    { type = "resource", resource = { uri = "r://x", text = "hi" } },
    { type = "resource", resource = { uri = "r://y", blob = "aGk=" } },
  } },
  no_text = { content = { { type = "text", text = "ok" }, { type = "text" } } },
  text_number = { content = { { type = "text", text = 42 } } },
  image_no_mime = { content = { { type = "image", data = "aGk=" } } },
  image_snake_mime = { content = { { type = "image", data = "aGk=", mime_type = "image/png" } } },
  audio_no_data = { content = { { type = "audio", mimeType = "audio/wav" } } },
  string_block = { content = { "hi" } },
  list_block = { content = { { "text", "hi" } } },
  no_type = { content = { { text = "hi" } } },
  robot = { content = { { type = "robot" } } },
  tool_use = { content = { { type = "tool_use", id = "1", name = "x", input = {} } } },
  link_no_name = { content = { { type = "resource_link", uri = "r://x" } } },
  link_no_uri = { content = { { type = "resource_link", name = "x" } } },
  embedded_no_resource = { content = { { type = "resource", uri = "r://x", text = "t" } } },
  embedded_no_uri = { content = { { type = "resource", resource = { text = "t" } } } },
  embedded_no_text = { content = { { type = "resource", resource = { uri = "r://x" } } } },
  embedded_string = { content = { { type = "resource", resource = "r://x" } } },
}

local fill = { contents = {
  { text = "a" },
  { uri = "r://other", blob = "aGk=" },
  { blob = "aGk=", mimeType = "x/y" },
} }
local reads = {
  ["r://fill"] = fill,
  ["r://kept"] = { contents = { fill.contents[1] } },
  ["r://neither"] = { contents = { { uri = "r://neither" } } },
  ["r://text_number"] = { contents = { { uri = "r://text_number", text = 1 } } },
  ["r://uri_number"] = { contents = { { uri = 1, text = "t" } } },
  ["r://string_entry"] = { contents = { "x" } },
}

local function text(s) return { type = "text", text = s } end
local prompts = {
  good = { messages = {
    { role = "user", content = text("hi") },
    { role = "assistant", content = { type = "resource", resource = { uri = "r://x", text = "t" }, annotations = { audience = { "user" } } } },
  } },
  system_role = { messages = { { role = "system", content = text("hi") } } },
  no_role = { messages = { { content = text("hi") } } },
  string_content = { messages = { { role = "user", content = "hi" } } },
  list_content = { messages = { { role = "user", content = { text("hi") } } } },
  no_content = { messages = { { role = "user" } } },
  block_no_text = { messages = { { role = "user", content = text("hi") }, { role = "user", content = { type = "text" } } } },
  string_message = { messages = { "hi" } },
}

return {
  init = function() return { name = "blocks", version = "1" }, { tools = {}, resources = {}, prompts = {} }, { n = 0 } end,
  tools = function()
    local list = { { name = "count", input_schema = { type = "object" } } }
    for name in pairs(results) do
      list[#list + 1] = { name = name, input_schema = { type = "object" } }
    end
    list[#list + 1] = { name = "error_no_text", input_schema = { type = "object" } }
    return list
  end,
  handle_tool = function(name, args, ctx, state)
    if name == "count" then return state.n end
    state.n = state.n + 1
    if name == "error_no_text" then return nil, { content = { { type = "text" } } } end
    return results[name]
  end,
  resources = function()
    local list = {}
    for uri in pairs(reads) do list[#list + 1] = { uri = uri, name = uri } end
    return list
  end,
  read_resource = function(uri) return reads[uri] end,
  prompts = function()
    local list = {}
    for name in pairs(prompts) do list[#list + 1] = { name = name } end
    return list
  end,
  get_prompt = function(name) return prompts[name] end,
}
