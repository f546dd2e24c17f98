-- notes.lua: resources, templates, prompts, completion and change
-- notifications, around a small notebook.
--
-- Each session has its own notebook, kept in its state. Tools add and change
-- notes; every note is a resource (notes://1, notes://2, ...); the template
-- notes://{id} lets a client read a note by id; a prompt asks the model to
-- summarize one; completion suggests ids.

local mcp = require("mcp")
local text = require("lib.text")

local function uri_of(id)
  return "notes://" .. id
end

-- ids are "1", "2", ... in the order the notes were added.
local function find(state, id)
  return state.notes[tonumber(id) or 0]
end

-- ids_starting_with lists the ids that complete a partial one.
local function ids_starting_with(state, prefix)
  local ids = {}
  for i = 1, #state.notes do
    local id = tostring(i)
    if text.starts_with(id, prefix) then
      ids[#ids + 1] = id
    end
  end
  return ids
end

return {
  route = { sessions = true },

  -- Each advertised capability promises its callbacks: resources needs
  -- resources and read_resource, prompts needs prompts and get_prompt,
  -- completions needs complete. subscribe = true lets clients subscribe to
  -- a note and hear when it changes.
  init = function(params)
    local capabilities = {
      tools = {},
      resources = { subscribe = true, listChanged = true },
      prompts = {},
      completions = {},
      logging = {},
    }
    return { name = "notes", version = "1.0.0" }, capabilities, { notes = {} }
  end,

  -- A session joins these broadcast channels when it starts.
  channels = function(state)
    return { "notes" }
  end,

  tools = function(state)
    return {
      {
        name = "add_note",
        description = "Add a note; returns its id",
        input_schema = {
          type = "object",
          properties = { title = { type = "string" }, text = { type = "string" } },
          required = { "title", "text" },
        },
      },
      {
        name = "update_note",
        description = "Replace the text of a note",
        input_schema = {
          type = "object",
          properties = { id = { type = "string" }, text = { type = "string" } },
          required = { "id", "text" },
        },
      },
    }
  end,

  handle_tool = function(name, args, ctx, state)
    if type(args.text) ~= "string" then
      return nil, "text must be a string"
    end

    if name == "add_note" then
      if type(args.title) ~= "string" or text.trim(args.title) == "" then
        return nil, "title must be a non-empty string"
      end
      table.insert(state.notes, { title = text.trim(args.title), text = args.text })
      local id = tostring(#state.notes)
      -- Tell clients to fetch resources/list again. A broadcast reaches every
      -- session that joined the channel; the others re-list and find nothing
      -- new. To tell only this session, use mcp.notify(ctx.session_id, ...).
      mcp.broadcast("notes", "notifications/resources/list_changed", {})
      -- A log message that travels with this call's answer.
      mcp.log(ctx, "info", "added note " .. id)
      return id
    end

    if name == "update_note" then
      local note = find(state, args.id)
      if not note then
        return nil, "no note with id " .. tostring(args.id)
      end
      note.text = args.text
      -- Sessions that subscribed to this note's uri get
      -- notifications/resources/updated.
      mcp.resource_updated(uri_of(args.id))
      return "updated " .. uri_of(args.id)
    end
  end,

  resources = function(state)
    local list = {}
    for i, note in ipairs(state.notes) do
      list[i] = {
        uri = uri_of(i),
        name = "note-" .. i,
        title = note.title,
        description = text.excerpt(note.text, 60),
        mime_type = "text/plain",
      }
    end
    return list
  end,

  resource_templates = function(state)
    return {
      {
        uri_template = "notes://{id}",
        name = "note",
        description = "A note by id",
        mime_type = "text/plain",
      },
    }
  end,

  -- read_resource is called for a listed uri (vars is empty) or for a uri
  -- that matches a template (vars.id holds the matched id). A string result
  -- is the resource's text; nil, message is a "not found" error.
  read_resource = function(uri, state, vars)
    local id = vars.id or uri:match("^notes://(.+)$")
    local note = find(state, id)
    if not note then
      return nil, "no note with id " .. tostring(id)
    end
    return note.text
  end,

  prompts = function(state)
    return {
      {
        name = "summarize",
        description = "Ask the model to summarize a note",
        arguments = { { name = "id", description = "The note's id", required = true } },
      },
    }
  end,

  get_prompt = function(name, args, state)
    local note = find(state, args.id)
    if not note then
      return nil, "no note with id " .. tostring(args.id)
    end
    return {
      description = "Summarize " .. note.title,
      messages = {
        {
          role = "user",
          content = { type = "text", text = "Summarize this note in one sentence:\n\n" .. note.text },
        },
      },
    }
  end,

  -- complete suggests values for the prompt's id argument and for the
  -- template's {id} variable, from what the user typed so far.
  complete = function(ref, argument, state, context)
    if argument.name == "id" then
      return ids_starting_with(state, argument.value)
    end
    return {}
  end,
}
