-- conformance.lua: every feature of the MCP protocol, in one Lua server.
--
-- This is the server the official MCP conformance suite tests luamcp with
-- (tests/conformance_test.go). The suite looks for fixtures by name, so the
-- tool, resource and prompt names and their texts below are fixed by it.
-- It is also the tour of the script API: each section shows one part of it.
--
-- Run it, then point the suite at it (Node 22 or newer):
--   luamcp serve --dir examples --addr 127.0.0.1:8750
--   npx @modelcontextprotocol/conformance server --url http://127.0.0.1:8750/mcp
-- The same URL serves both eras: 2025-11-25 sessions (initialize) and the
-- stateless 2026-07-28 revision (conformance 0.2.0-alpha.12 with
-- --requirements 2026-07-28), from this one script.

local mcp = require("mcp")

-- A 1x1 PNG and a tiny WAV, base64-encoded: binary content travels as base64.
local PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
local WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

-- The input schema of a tool that takes no arguments.
local NO_ARGS = { type = "object", additionalProperties = false }

-- text builds a text content block; most results are lists of blocks.
local function text(s)
  return { type = "text", text = s }
end

---------------------------------------------------------------------------
-- Tools: each descriptor is a table; snake_case keys (input_schema) become
-- the wire's camelCase (inputSchema). Everything inside a schema is sent
-- exactly as written, $schema and $defs included.
---------------------------------------------------------------------------
local TOOLS = {
  { name = "test_simple_text", description = "Tests simple text content response", input_schema = NO_ARGS },
  { name = "test_image_content", description = "Tests image content response", input_schema = NO_ARGS },
  { name = "test_audio_content", description = "Tests audio content response", input_schema = NO_ARGS },
  { name = "test_embedded_resource", description = "Tests embedded resource content response", input_schema = NO_ARGS },
  { name = "test_multiple_content_types", description = "Tests response with multiple content types (text, image, resource)",
    input_schema = NO_ARGS },
  { name = "test_tool_with_logging", description = "Tests tool that emits log messages during execution", input_schema = NO_ARGS },
  { name = "test_tool_with_progress", description = "Tests tool that reports progress notifications", input_schema = NO_ARGS },
  { name = "test_error_handling", description = "Tests error response handling", input_schema = NO_ARGS },
  { name = "test_reconnection",
    description = "Tests SSE stream disconnection and client reconnection (SEP-1699): the server closes the stream mid-call "
      .. "and sends the result after the client reconnects",
    input_schema = NO_ARGS },
  { name = "test_sampling", description = "Tests server-initiated sampling (LLM completion request)",
    input_schema = {
      type = "object",
      properties = { prompt = { type = "string", description = "The prompt to send to the LLM" } },
      required = { "prompt" },
    } },
  { name = "test_elicitation", description = "Tests server-initiated elicitation (user input request)",
    input_schema = {
      type = "object",
      properties = { message = { type = "string", description = "The message to show the user" } },
      required = { "message" },
    } },
  { name = "test_elicitation_sep1034_defaults", description = "Tests elicitation with default values per SEP-1034",
    input_schema = NO_ARGS },
  { name = "test_elicitation_sep1330_enums", description = "Tests elicitation with enum schema improvements per SEP-1330",
    input_schema = NO_ARGS },
  { name = "json_schema_2020_12_tool", description = "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    input_schema = {
      ["$schema"] = "https://json-schema.org/draft/2020-12/schema",
      type = "object",
      ["$defs"] = {
        address = {
          ["$anchor"] = "addressDef",
          type = "object",
          properties = { street = { type = "string" }, city = { type = "string" } },
        },
      },
      properties = {
        name = { type = "string" },
        address = { ["$ref"] = "#/$defs/address" },
        contactMethod = { type = "string", enum = { "phone", "email" } },
        phone = { type = "string" },
        email = { type = "string" },
      },
      -- SEP-2106 (2026-07-28): composition and conditional keywords pass
      -- through like the rest (if, then and else are Lua keywords, hence
      -- the brackets).
      allOf = { { anyOf = { { required = { "phone" } }, { required = { "email" } } } } },
      ["if"] = { properties = { contactMethod = { const = "phone" } }, required = { "contactMethod" } },
      ["then"] = { required = { "phone" } },
      ["else"] = { required = { "email" } },
      additionalProperties = false,
    } },
  -- The 2026-07-28 fixtures. A tool that asks the client (mcp.elicit,
  -- mcp.sample, mcp.list_roots, mcp.ask) runs again from its start for each
  -- input_required round in that era, so it must be safe to re-run up to
  -- its question: these only ask, then answer.
  { name = "test_missing_capability",
    description = "Needs the client's sampling capability: a 2026-07-28 client that did not declare it gets -32021",
    input_schema = NO_ARGS },
  { name = "test_streaming_elicitation", description = "Asks the user a question (elicitation) while the call runs",
    input_schema = NO_ARGS },
  { name = "test_logging_tool", description = "Logs at every level while it runs (the client's log level filters them)",
    input_schema = NO_ARGS },
  { name = "test_trigger_tool_change", description = "Announces a change of the tool list (notifications/tools/list_changed)",
    input_schema = NO_ARGS },
  { name = "test_trigger_prompt_change", description = "Announces a change of the prompt list (notifications/prompts/list_changed)",
    input_schema = NO_ARGS },
  { name = "test_input_required_result_elicitation", description = "Asks the user's name (input request user_name)",
    input_schema = NO_ARGS },
  { name = "test_input_required_result_sampling", description = "Asks the client's model a question (input request capital_question)",
    input_schema = NO_ARGS },
  { name = "test_input_required_result_list_roots", description = "Asks the client for its roots (input request client_roots)",
    input_schema = NO_ARGS },
  { name = "test_input_required_result_request_state", description = "Asks for a confirmation; the answer travels in requestState",
    input_schema = NO_ARGS },
  { name = "test_input_required_result_multiple_inputs",
    description = "Asks for a name, a greeting and the roots in one round (mcp.ask)", input_schema = NO_ARGS },
  { name = "test_input_required_result_multi_round", description = "Asks two questions, one round each",
    input_schema = NO_ARGS },
  { name = "test_input_required_result_tampered_state", description = "Asks for a confirmation; a tampered requestState is refused",
    input_schema = NO_ARGS },
  { name = "test_input_required_result_capabilities",
    description = "Asks only through the capabilities the client declared (ctx.client_capabilities)", input_schema = NO_ARGS },
  -- x-mcp-header: a 2026-07-28 client mirrors these arguments into
  -- Mcp-Param-* headers, which the transport checks against the body.
  { name = "test_custom_headers", description = "A tool whose arguments are mirrored into Mcp-Param-* headers",
    input_schema = {
      type = "object",
      properties = {
        region = { type = "string", description = "Plain ASCII string value", ["x-mcp-header"] = "Region" },
        priority = { type = "integer", description = "Integer numeric value", ["x-mcp-header"] = "Priority" },
        verbose = { type = "boolean", description = "Boolean value", ["x-mcp-header"] = "Verbose" },
        query = { type = "string", description = "No x-mcp-header annotation" },
      },
      required = { "region", "priority", "query" },
    } },
  { name = "test_custom_headers_null", description = "A tool for null or omitted x-mcp-header arguments",
    input_schema = {
      type = "object",
      properties = {
        region = { type = "string", description = "Plain ASCII string value", ["x-mcp-header"] = "Region" },
        priority = { type = "integer", description = "Integer numeric value", ["x-mcp-header"] = "Priority" },
        verbose = { type = "boolean", description = "Boolean value, null to test omission", ["x-mcp-header"] = "Verbose" },
        query = { type = "string", description = "No x-mcp-header annotation" },
      },
      required = { "region", "priority", "query" },
    } },
  -- Tasks (2026-07-28 extension io.modelcontextprotocol/tasks): a tool that
  -- declares execution.taskSupport may become a task; its handler decides
  -- where, with mcp.task(ctx). "required" refuses clients without tasks.
  { name = "greet", description = "Greets someone (never a task)",
    input_schema = { type = "object", properties = { name = { type = "string" } } } },
  { name = "slow_compute", description = "Sleeps `seconds` seconds as a task, then answers",
    input_schema = { type = "object", properties = { seconds = { type = "number" }, label = { type = "string" } } },
    execution = { taskSupport = "optional" } },
  { name = "failing_job", description = "A task whose tool fails after a second", input_schema = NO_ARGS,
    execution = { taskSupport = "required" } },
  { name = "protocol_error_job", description = "A task whose handler crashes", input_schema = NO_ARGS,
    execution = { taskSupport = "optional" } },
  { name = "confirm_delete", description = "A task that asks for a confirmation before it deletes",
    input_schema = { type = "object", properties = { filename = { type = "string" } } },
    execution = { taskSupport = "optional" } },
  { name = "multi_input", description = "A task that asks two questions in one round", input_schema = NO_ARGS,
    execution = { taskSupport = "optional" } },
  { name = "test_tool_with_task", description = "Asks a name first, then becomes a task that greets", input_schema = NO_ARGS,
    execution = { taskSupport = "required" } },
}

-- The form schemas of the two elicitation tools (SEP-1034: defaults on every
-- primitive type; SEP-1330: the five ways to write an enum).
local DEFAULTS_FORM = {
  type = "object",
  properties = {
    name = { type = "string", description = "User name", default = "John Doe" },
    age = { type = "integer", description = "User age", default = 30 },
    score = { type = "number", description = "User score", default = 95.5 },
    status = { type = "string", description = "User status", enum = { "active", "inactive", "pending" }, default = "active" },
    verified = { type = "boolean", description = "Verification status", default = true },
  },
}

local ENUMS_FORM = {
  type = "object",
  properties = {
    untitledSingle = { type = "string", description = "Select one option", enum = { "option1", "option2", "option3" } },
    titledSingle = { type = "string", description = "Select one option with titles",
      oneOf = {
        { const = "value1", title = "First Option" },
        { const = "value2", title = "Second Option" },
        { const = "value3", title = "Third Option" },
      } },
    legacyEnum = { type = "string", description = "Select one option (legacy)",
      enum = { "opt1", "opt2", "opt3" }, enumNames = { "Option One", "Option Two", "Option Three" } },
    untitledMulti = { type = "array", description = "Select multiple options", minItems = 1, maxItems = 3,
      items = { type = "string", enum = { "option1", "option2", "option3" } } },
    titledMulti = { type = "array", description = "Select multiple options with titles", minItems = 1, maxItems = 3,
      items = { anyOf = {
        { const = "value1", title = "First Choice" },
        { const = "value2", title = "Second Choice" },
        { const = "value3", title = "Third Choice" },
      } } },
  },
}

-- elicit asks the user to fill form and reports what came back. mcp.elicit
-- sends elicitation/create on the call's own stream and waits for the answer;
-- it returns nil and a message when the client cannot or will not answer.
local function elicit(ctx, message, form, label)
  local answer, err = mcp.elicit(ctx, { message = message, requested_schema = form })
  if not answer then
    return nil, "Elicitation failed: " .. err
  end
  local content = mcp.json_encode(answer.content or mcp.object({}))
  return label .. "action=" .. answer.action .. ", content=" .. content
end

local handlers = {}

-- The simplest result: a string is one text block.
function handlers.test_simple_text()
  return "This is a simple text response for testing."
end

-- Any other content is a table with a list of blocks.
function handlers.test_image_content()
  return { content = { { type = "image", data = PNG, mimeType = "image/png" } } }
end

function handlers.test_audio_content()
  return { content = { { type = "audio", data = WAV, mimeType = "audio/wav" } } }
end

function handlers.test_embedded_resource()
  return { content = { {
    type = "resource",
    resource = { uri = "test://embedded-resource", mimeType = "text/plain", text = "This is an embedded resource content." },
  } } }
end

function handlers.test_multiple_content_types()
  return { content = {
    text("Multiple content types test:"),
    { type = "image", data = PNG, mimeType = "image/png" },
    { type = "resource", resource = {
      uri = "test://mixed-content-resource", mimeType = "application/json",
      text = mcp.json_encode({ test = "data", value = 123 }),
    } },
  } }
end

-- mcp.log(ctx, level, data) sends notifications/message on the call's own
-- stream (the answer turns into an SSE stream at the first one); messages
-- below the level the client set with logging/setLevel are dropped.
-- mcp.sleep waits without blocking the server, and stops if the call is
-- cancelled.
function handlers.test_tool_with_logging(args, ctx)
  mcp.log(ctx, "info", "Tool execution started")
  mcp.sleep(50)
  mcp.log(ctx, "info", "Tool processing data")
  mcp.sleep(50)
  mcp.log(ctx, "info", "Tool execution completed")
  return "Tool with logging executed successfully"
end

-- mcp.progress reports progress when the client asked for it (the request
-- carried a progress token); otherwise it does nothing, so a tool can always
-- call it.
function handlers.test_tool_with_progress(args, ctx)
  for step = 0, 100, 50 do
    mcp.progress(ctx, step, { total = 100, message = "Completed step " .. step .. " of 100" })
    if step < 100 then
      mcp.sleep(50)
    end
  end
  return tostring(ctx.progress_token or "no progress token")
end

-- A tool failure the model should see: nil and a message make a result with
-- isError = true (error(...) would be a protocol error, -32603, instead).
function handlers.test_error_handling()
  return nil, "This tool intentionally returns an error for testing"
end

-- SSE polling (2025-11-25): mcp.close_stream ends the call's HTTP stream
-- early, as a server does to shed idle connections. The client reconnects
-- with GET + Last-Event-ID and receives the rest of the call, this result
-- included.
function handlers.test_reconnection(args, ctx)
  mcp.close_stream(ctx)
  mcp.sleep(100)
  return "Reconnection test completed successfully. If you received this, "
    .. "the client properly reconnected after stream closure."
end

-- mcp.sample asks the client's model (sampling/createMessage); snake_case
-- keys become camelCase (max_tokens -> maxTokens).
function handlers.test_sampling(args, ctx)
  local answer, err = mcp.sample(ctx, {
    messages = { { role = "user", content = text(args.prompt) } },
    max_tokens = 100,
  })
  if not answer then
    return nil, "Sampling failed: " .. err
  end
  local reply = answer.content and answer.content.text or "No response"
  return "LLM response: " .. reply
end

function handlers.test_elicitation(args, ctx)
  return elicit(ctx, args.message, {
    type = "object",
    properties = { response = { type = "string", description = "User's response" } },
    required = { "response" },
  }, "User response: ")
end

function handlers.test_elicitation_sep1034_defaults(args, ctx)
  return elicit(ctx, "Please review and update the form fields with defaults", DEFAULTS_FORM, "Elicitation completed: ")
end

function handlers.test_elicitation_sep1330_enums(args, ctx)
  return elicit(ctx, "Please select options from the enum fields", ENUMS_FORM, "Elicitation completed: ")
end

---------------------------------------------------------------------------
-- The 2026-07-28 era. Requests to the client have a key, the inputRequests
-- key the client answers by (key = "user_name"; without one they are named
-- "elicit-1", "sample-1", "roots-1", ... in call order). In that era the
-- first run stops at the first unanswered request and the client gets
-- resultType "input_required"; its retry runs the tool again from the start,
-- and each request returns the recorded answer until the next unanswered
-- one. In the 2025 era the same code asks on the call's stream.
---------------------------------------------------------------------------
local NAME_FORM = {
  type = "object",
  properties = { name = { type = "string" } },
  required = { "name" },
}

-- The channel every session and listen stream joins (channels below), for
-- the list-changed announcements.
local CHANGES = "changes"

-- Without a sampling capability the 2025 era fails in-band (nil, err); the
-- 2026-07-28 era ends the call with -32021 and requiredCapabilities.
function handlers.test_missing_capability(args, ctx)
  local answer, err = mcp.sample(ctx, {
    messages = { { role = "user", content = text("Say hello") } },
    max_tokens = 10,
  })
  if not answer then
    return nil, "Sampling failed: " .. err
  end
  return "Sampling answered: " .. (answer.content and answer.content.text or "")
end

function handlers.test_streaming_elicitation(args, ctx)
  return elicit(ctx, "Do you want to continue?", {
    type = "object",
    properties = { confirm = { type = "boolean" } },
    required = { "confirm" },
  }, "Elicitation completed: ")
end

-- mcp.log(ctx, ...) goes out only at or above the level the client asked
-- for (logging/setLevel in a session; _meta's logLevel in the 2026-07-28
-- era, where a request without one gets no log messages at all).
function handlers.test_logging_tool(args, ctx)
  for _, level in ipairs({ "debug", "info", "notice", "warning", "error" }) do
    mcp.log(ctx, level, "test_logging_tool: a message at level " .. level)
  end
  return "Logged a message at each level from debug to error"
end

-- mcp.broadcast reaches every session and every listen stream that joined
-- the channel; a listen stream gets a list change only if it asked for it.
function handlers.test_trigger_tool_change()
  mcp.broadcast(CHANGES, "notifications/tools/list_changed")
  return "Announced a change of the tool list"
end

function handlers.test_trigger_prompt_change()
  mcp.broadcast(CHANGES, "notifications/prompts/list_changed")
  return "Announced a change of the prompt list"
end

function handlers.test_input_required_result_elicitation(args, ctx)
  local answer, err = mcp.elicit(ctx, { key = "user_name", message = "What is your name?", requested_schema = NAME_FORM })
  if not answer then
    return nil, "Elicitation failed: " .. err
  end
  if answer.action ~= "accept" then
    return "Hello, whoever you are! (" .. answer.action .. ")"
  end
  return "Hello, " .. tostring(answer.content.name) .. "!"
end

function handlers.test_input_required_result_sampling(args, ctx)
  local answer, err = mcp.sample(ctx, {
    key = "capital_question",
    messages = { { role = "user", content = text("What is the capital of France?") } },
    max_tokens = 100,
  })
  if not answer then
    return nil, "Sampling failed: " .. err
  end
  return "The model says: " .. (answer.content and answer.content.text or "nothing")
end

function handlers.test_input_required_result_list_roots(args, ctx)
  local answer, err = mcp.list_roots(ctx, { key = "client_roots" })
  if not answer then
    return nil, "roots/list failed: " .. err
  end
  local uris = {}
  for _, root in ipairs(answer.roots or {}) do
    uris[#uris + 1] = root.uri
  end
  return "The client has " .. #uris .. " root(s): " .. table.concat(uris, ", ")
end

-- The transport keeps the answers of earlier rounds in requestState, signed
-- and bound to this call: reaching this line again means it verified it.
function handlers.test_input_required_result_request_state(args, ctx)
  local answer, err = mcp.elicit(ctx, {
    key = "confirm",
    message = "Please confirm",
    requested_schema = { type = "object", properties = { ok = { type = "boolean" } }, required = { "ok" } },
  })
  if not answer then
    return nil, "Elicitation failed: " .. err
  end
  return "state-ok: the confirmation came back (" .. answer.action .. ")"
end

-- mcp.ask asks several things in one round and returns the answers by key.
function handlers.test_input_required_result_multiple_inputs(args, ctx)
  local got, failed = mcp.ask(ctx, {
    user_name = { method = "elicitation/create", params = { message = "What is your name?", requested_schema = NAME_FORM } },
    greeting = { method = "sampling/createMessage", params = {
      messages = { { role = "user", content = text("Generate a greeting") } },
      max_tokens = 50,
    } },
    client_roots = { method = "roots/list" },
  })
  if not got then
    return nil, "Asking failed: " .. failed
  end
  if failed then
    return nil, "Some requests failed: " .. mcp.json_encode(failed)
  end
  local name = got.user_name.content and got.user_name.content.name or "?"
  local greeting = got.greeting.content and got.greeting.content.text or "?"
  return greeting .. " " .. name .. " (" .. #(got.client_roots.roots or {}) .. " root(s))"
end

function handlers.test_input_required_result_multi_round(args, ctx)
  local step1, err = mcp.elicit(ctx, { key = "step1", message = "Step 1: What is your name?", requested_schema = NAME_FORM })
  if not step1 then
    return nil, "Step 1 failed: " .. err
  end
  local step2, err2 = mcp.elicit(ctx, {
    key = "step2",
    message = "Step 2: What is your favorite color?",
    requested_schema = { type = "object", properties = { color = { type = "string" } }, required = { "color" } },
  })
  if not step2 then
    return nil, "Step 2 failed: " .. err2
  end
  local name = step1.content and step1.content.name or "?"
  local color = step2.content and step2.content.color or "?"
  return name .. " likes " .. color
end

function handlers.test_input_required_result_tampered_state(args, ctx)
  local answer, err = mcp.elicit(ctx, {
    key = "confirm",
    message = "Please confirm",
    requested_schema = { type = "object", properties = { ok = { type = "boolean" } }, required = { "ok" } },
  })
  if not answer then
    return nil, "Elicitation failed: " .. err
  end
  return "Confirmed (" .. answer.action .. ")"
end

-- ctx.client_capabilities is what the client declared (initialize in a
-- session, _meta in the 2026-07-28 era): ask only through those.
function handlers.test_input_required_result_capabilities(args, ctx)
  local caps = ctx.client_capabilities or {}
  local want, asked = {}, {}
  if caps.elicitation then
    want.user_name = { method = "elicitation/create", params = { message = "What is your name?", requested_schema = NAME_FORM } }
  end
  if caps.sampling then
    want.greeting = { method = "sampling/createMessage", params = {
      messages = { { role = "user", content = text("Generate a greeting") } },
      max_tokens = 50,
    } }
  end
  if caps.roots then
    want.client_roots = { method = "roots/list" }
  end
  for key in pairs(want) do
    asked[#asked + 1] = key
  end
  if #asked == 0 then
    return "The client declared no capability to ask through"
  end
  table.sort(asked)
  local got, failed = mcp.ask(ctx, want)
  if not got then
    return nil, "Asking failed: " .. failed
  end
  return "Asked " .. table.concat(asked, ", ") .. (failed and ("; failed: " .. mcp.json_encode(failed)) or "")
end

function handlers.test_custom_headers(args)
  return "Custom headers test completed: " .. mcp.json_encode(args)
end

function handlers.test_custom_headers_null(args)
  return "Custom headers null test completed: " .. mcp.json_encode(args)
end

---------------------------------------------------------------------------
-- Tasks. mcp.task(ctx) answers the client at once with a task id and lets
-- the handler run on; the client polls tasks/get for the result. It returns
-- false (and the call simply goes on) when the call cannot be a task: a
-- client without the extension, the 2025 era, a tool that declared no
-- execution.taskSupport.
---------------------------------------------------------------------------
function handlers.greet(args)
  return "Hello, " .. tostring(args.name or "world") .. "!"
end

function handlers.slow_compute(args, ctx)
  mcp.task(ctx, { ttl_ms = 600000, poll_ms = 200 })
  -- mcp.sleep stops here when the client cancels the task (tasks/cancel).
  mcp.sleep((tonumber(args.seconds) or 1) * 1000)
  return "Computed " .. tostring(args.label or "something") .. " in " .. tostring(args.seconds or 1) .. "s"
end

-- A tool's own failure (`nil, message`) ends the task "completed" with
-- isError = true: the tool ran.
function handlers.failing_job(args, ctx)
  mcp.task(ctx)
  mcp.sleep(1000)
  return nil, "The job failed: nothing to process"
end

-- A crash (a Lua error) ends the task "failed", with -32603 as its error;
-- the message and the stack go to the server's log, not to the client.
function handlers.protocol_error_job(args, ctx)
  mcp.task(ctx)
  error("the job's handler crashed")
end

-- Inside a task, a request to the client parks the task in input_required
-- until the client answers with tasks/update; the handler then goes on from
-- where it waited (it is not run again, unlike a call's input_required).
function handlers.confirm_delete(args, ctx)
  mcp.task(ctx)
  local answer, err = mcp.elicit(ctx, {
    key = "confirm",
    message = "Delete " .. tostring(args.filename) .. "?",
    requested_schema = { type = "object", properties = { confirm = { type = "boolean" } }, required = { "confirm" } },
  })
  if not answer then
    return nil, "Could not ask: " .. err
  end
  if answer.action == "accept" and answer.content.confirm then
    return "Deleted " .. tostring(args.filename)
  end
  return "Kept " .. tostring(args.filename)
end

function handlers.multi_input(args, ctx)
  mcp.task(ctx)
  local form = { type = "object", properties = { name = { type = "string" }, confirm = { type = "boolean" } } }
  local got, failed = mcp.ask(ctx, {
    first = { method = "elicitation/create", params = { message = "First answer?", requested_schema = form } },
    second = { method = "elicitation/create", params = { message = "Second answer?", requested_schema = form } },
  })
  if failed then
    return nil, "Could not ask: " .. mcp.json_encode(failed)
  end
  return "Got " .. tostring(got.first.content.name) .. " and " .. tostring(got.second.content.name)
end

-- Questions before mcp.task are rounds of the call itself (input_required,
-- the handler run again with the answers); the task starts after them.
function handlers.test_tool_with_task(args, ctx)
  local answer, err = mcp.elicit(ctx, { key = "user_name", message = "What is your name?", requested_schema = NAME_FORM })
  if not answer then
    return nil, "Elicitation failed: " .. err
  end
  mcp.task(ctx)
  mcp.sleep(200)
  return "Hello, " .. tostring(answer.content and answer.content.name) .. "! (from a task)"
end

function handlers.json_schema_2020_12_tool(args)
  return "JSON Schema 2020-12 tool called with: " .. mcp.json_encode(args)
end

---------------------------------------------------------------------------
-- Resources, a template and prompts.
---------------------------------------------------------------------------
local RESOURCES = {
  { uri = "test://static-text", name = "static-text", title = "Static Text Resource",
    description = "A static text resource for testing", mime_type = "text/plain" },
  { uri = "test://static-binary", name = "static-binary", title = "Static Binary Resource",
    description = "A static binary resource (image) for testing", mime_type = "image/png" },
  { uri = "test://watched-resource", name = "watched-resource", title = "Watched Resource",
    description = "A resource clients can subscribe to", mime_type = "text/plain" },
}

local PROMPTS = {
  { name = "test_simple_prompt", title = "Simple Test Prompt", description = "A simple prompt without arguments" },
  { name = "test_prompt_with_arguments", title = "Prompt With Arguments", description = "A prompt with required arguments",
    arguments = {
      { name = "arg1", description = "First test argument", required = true },
      { name = "arg2", description = "Second test argument", required = true },
    } },
  { name = "test_prompt_with_embedded_resource", title = "Prompt With Embedded Resource",
    description = "A prompt that includes an embedded resource",
    arguments = { { name = "resourceUri", description = "URI of the resource to embed", required = true } } },
  { name = "test_prompt_with_image", title = "Prompt With Image", description = "A prompt that includes image content" },
  { name = "test_input_required_result_prompt", title = "Prompt That Asks",
    description = "A prompt that asks the user for its context first (input request user_context)" },
}

local function user(content)
  return { role = "user", content = content }
end

local prompts = {
  test_simple_prompt = function()
    return { messages = { user(text("This is a simple prompt for testing.")) } }
  end,
  test_prompt_with_arguments = function(args)
    return { messages = { user(text("Prompt with arguments: arg1='" .. args.arg1 .. "', arg2='" .. args.arg2 .. "'")) } }
  end,
  test_prompt_with_embedded_resource = function(args)
    return { messages = {
      user({ type = "resource", resource = { uri = args.resourceUri, mimeType = "text/plain", text = "Embedded resource content for testing." } }),
      user(text("Please process the embedded resource above.")),
    } }
  end,
  test_prompt_with_image = function()
    return { messages = {
      user({ type = "image", data = PNG, mimeType = "image/png" }),
      user(text("Please analyze the image above.")),
    } }
  end,
  -- Prompts may ask the client too: get_prompt gets ctx as its last argument.
  test_input_required_result_prompt = function(args, ctx)
    local answer, err = mcp.elicit(ctx, {
      key = "user_context",
      message = "What context should the prompt use?",
      requested_schema = { type = "object", properties = { context = { type = "string" } }, required = { "context" } },
    })
    if not answer then
      return nil, "Elicitation failed: " .. err
    end
    local context = answer.content and answer.content.context or "(none)"
    return { messages = { user(text("Use this context: " .. context)) } }
  end,
}

-- Suggestions for completion/complete, matched by prefix.
local SUGGESTIONS = { "test", "testing", "tested", "example" }

---------------------------------------------------------------------------
-- The server module.
---------------------------------------------------------------------------
return {
  -- Session mode: initialize starts a session (Mcp-Session-Id) with its own
  -- state, a GET channel for server pushes, and DELETE to end it.
  route = { path = "/mcp", sessions = true },

  -- init runs once per session. It returns who we are, what we can do (sent
  -- to the client as given) and the session's initial state.
  init = function(params)
    return { name = "mcp-conformance-test-server", version = "1.0.0" },
      {
        tools = { listChanged = true },
        resources = { subscribe = true, listChanged = true },
        prompts = { listChanged = true },
        logging = {},
        completions = {},
      },
      { session_id = params.mcp_session_id }
  end,

  tools = function(state)
    return TOOLS
  end,

  -- handle_tool(name, args, ctx, state): ctx identifies the running call
  -- (ctx.session_id, ctx.request_id, ctx.progress_token, and the era:
  -- ctx.protocol_version, ctx.client_capabilities) and is what the mcp.*
  -- functions that talk back to the client take.
  handle_tool = function(name, args, ctx, state)
    return handlers[name](args, ctx, state)
  end,

  resources = function(state)
    return RESOURCES
  end,

  resource_templates = function(state)
    return { { uri_template = "test://template/{id}/data", name = "template", title = "Resource Template",
      description = "A resource template with parameter substitution", mime_type = "application/json" } }
  end,

  -- read_resource(uri, state, vars, ctx): vars holds what a template matched
  -- ({id = "123"} for test://template/123/data).
  read_resource = function(uri, state, vars, ctx)
    if uri == "test://static-text" then
      return { contents = { { uri = uri, mimeType = "text/plain", text = "This is the content of the static text resource." } } }
    elseif uri == "test://static-binary" then
      return { contents = { { uri = uri, mimeType = "image/png", blob = PNG } } }
    elseif uri == "test://watched-resource" then
      return { contents = { { uri = uri, mimeType = "text/plain", text = "Watched resource content" } } }
    elseif vars.id then
      local data = mcp.json_encode({ id = vars.id, templateTest = true, data = "Data for ID: " .. vars.id })
      return { contents = { { uri = uri, mimeType = "application/json", text = data } } }
    end
    return nil, "Resource not found: " .. uri
  end,

  prompts = function(state)
    return PROMPTS
  end,

  get_prompt = function(name, args, state, ctx)
    return prompts[name](args, ctx)
  end,

  -- channels(state) names the channels mcp.broadcast reaches this session
  -- (or 2026-07-28 listen stream) on.
  channels = function(state)
    return { CHANGES }
  end,

  -- complete(ref, argument, state, context): ref names the prompt or
  -- resource, argument = {name, value} is what the user typed so far.
  complete = function(ref, argument, state, context)
    local out = {}
    for _, s in ipairs(SUGGESTIONS) do
      if s:sub(1, #argument.value) == argument.value then
        out[#out + 1] = s
      end
    end
    return out
  end,

  -- terminate(reason, state) runs when a session ends: "normal" for DELETE
  -- or idle expiry, "shutdown" when the server stops.
  terminate = function(reason, state)
    print("conformance session " .. tostring(state.session_id) .. " ended: " .. reason)
  end,
}
