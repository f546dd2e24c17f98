---@meta mcp
-- LuaLS (lua-language-server) type stubs for luamcp scripts.
-- Point your editor at this folder (see the README, "Editor support"); nothing here runs.

---@class mcp.Null: userdata
---The JSON null sentinel (a userdata): compare with `v == mcp.null`. `tostring(mcp.null)` is
---"null"; it is truthy, so test `v == mcp.null`, not `not v`.

---@class mcp.Context
---The request context: the third argument of handle_tool, the last of get_prompt and
---read_resource. It is inert once the call has returned: mcp functions given a stale ctx do
---nothing (requests to the client fail in-band).
---@field session_id string? the session's Mcp-Session-Id; nil in stateless mode and in the 2026-07-28 era
---@field request_id string|number the JSON-RPC id of the request being answered
---@field progress_token any the client's _meta.progressToken, any JSON value as sent (MCP has a string or a number); nil when it sent none, or one longer than 1 KiB
---@field protocol_version string? the revision the call is served under, e.g. "2025-11-25" or "2026-07-28"
---@field client_capabilities table? the client's declared capabilities (e.g. {sampling={}, elicitation={}}); nil when unknown
---@field auth mcp.Auth? the request's verified access token on a route with the oauth option; nil elsewhere

---@class mcp.Auth
---The verified access token of a request (route option oauth): ctx.auth, request.auth in the auth hook.
---@field subject string the token's sub; a session belongs to the subject that opened it
---@field scopes string[] the granted scopes (the scope claim, or scp)
---@field client_id string? the client_id (or azp) claim
---@field claims table the token's whole payload (iss, aud, exp, custom claims...)

---@alias mcp.LogLevel "debug"|"info"|"notice"|"warning"|"error"|"critical"|"alert"|"emergency"

---@class mcp.ProgressOptions
---@field total number? the total the progress counts up to
---@field message string? a human-readable status line

---@class mcp.ElicitRequest
---@field message string what to ask the user
---@field requested_schema table? a flat JSON Schema object of primitive properties (form mode; url mode has none)
---@field mode string? "form" (default) or "url" (2025-11-25)
---@field url string? the page to open, in url mode
---@field elicitation_id string? the id of a url-mode elicitation
---@field key string? names the request (the 2026-07-28 inputRequests key); default "elicit-1", "elicit-2", ... in call order; never sent

---@class mcp.SampleRequest
---@field messages table[] {role="user"|"assistant", content={type="text", text=...}} entries; content is a block or a list of blocks (text, image, audio, tool_use, tool_result), each with the fields MCP requires, or the request raises
---@field max_tokens integer
---@field system_prompt string?
---@field model_preferences table? {hints={{name=}}, cost_priority=, speed_priority=, intelligence_priority=} (0 to 1; snake_case or the wire's camelCase)
---@field temperature number?
---@field stop_sequences string[]?
---@field include_context "none"|"thisServer"|"allServers"?
---@field metadata table?
---@field tools table[]? tools the model may use (2025-11-25): {name=, input_schema=, output_schema=?, ...}, the schemas renamed and written as a tool descriptor's
---@field tool_choice table?
---@field key string? names the request (the 2026-07-28 inputRequests key); default "sample-1", ... in call order; never sent

---@class mcp.RootsOptions
---@field key string? names the request (the 2026-07-28 inputRequests key); default "roots-1", ... in call order

---@class mcp.InputRequest
---@field method "elicitation/create"|"sampling/createMessage"|"roots/list"
---@field params table? the request's params, as for mcp.elicit / mcp.sample (snake_case keys are renamed)

---@class mcp
---@field null mcp.Null JSON null
local mcp = {}

---Sends notifications/progress on the call's SSE stream. A no-op when the call has no progress
---token or is answered as plain JSON, so a tool can call it unconditionally; a progress not
---above the call's last one is not sent (MCP has it increase).
---@param ctx mcp.Context
---@param progress number must increase from one notification of the call to the next
---@param opts mcp.ProgressOptions?
function mcp.progress(ctx, progress, opts) end

---Pushes one notification to one session of this script's route, on its GET channel (buffered
---for replay when none is open). A nil session id (a stateless call's ctx.session_id), an unknown
---one or another route's session does nothing.
---@param session_id string?
---@param method string a notification: "notifications/..." (e.g. "notifications/tools/list_changed")
---@param params table? encoded as the notification's params
---@return boolean ok false when the push is dropped (a method outside notifications/, params with no JSON form, or an MCP notification without the params it requires, e.g. notifications/message without level)
---@return string? err why it was dropped
function mcp.notify(session_id, method, params) end

---Pushes one notification to every session of this script's route whose `channels(state)` named
---`channel`.
---@param channel string
---@param method string a notification: "notifications/..."
---@param params table?
---@return boolean ok false when the push is dropped (a method outside notifications/, params with no JSON form, or an MCP notification without the params it requires)
---@return string? err why it was dropped
function mcp.broadcast(channel, method, params) end

---Sends notifications/resources/updated {uri} to every session of this script's route subscribed
---to `uri`.
---@param uri string
---@return boolean ok always true
function mcp.resource_updated(uri) end

---Sends notifications/message {level, data}: with a session id (of this script's route), on that
---session's GET channel; with a ctx, on the running call's own stream. Dropped below the session's level (default info).
---A nil target (a stateless ctx.session_id) does nothing; an unknown level raises. Data with no
---JSON form is logged and dropped for a session target (false, err) and fails the call for a ctx.
---@param target string|mcp.Context|nil
---@param level mcp.LogLevel
---@param data any JSON-encodable
---@return boolean? ok for a session target: false when the message was dropped
---@return string? err why it was dropped
function mcp.log(target, level, data) end

---Waits `ms` milliseconds; cancellation and timeouts interrupt it (the Lua code stops with an
---error, which rolls the session state back).
---@param ms number
function mcp.sleep(ms) end

---Asks the user through the client (elicitation/create). In the 2026-07-28 era the first run of the
---call stops here (input_required) and the client's retry re-runs the callback from its start,
---where this returns the recorded answer: a callback that asks must be safe to re-run up to its
---question. A key asked twice in one call raises.
---@param ctx mcp.Context
---@param request mcp.ElicitRequest
---@return table? result {action="accept"|"decline"|"cancel", content=?}
---@return string? err why no result (e.g. the 2025 client did not declare elicitation)
function mcp.elicit(ctx, request) end

---Asks the client's model for a completion (sampling/createMessage); the 2026-07-28 era as for mcp.elicit.
---@param ctx mcp.Context
---@param request mcp.SampleRequest
---@return table? result the client's answer as sent: {role=, content=, model=, stopReason=?}
---@return string? err
function mcp.sample(ctx, request) end

---Asks the client for its roots (roots/list); the 2026-07-28 era as for mcp.elicit.
---@param ctx mcp.Context
---@param opts mcp.RootsOptions?
---@return table? result {roots={{uri=, name=?}, ...}}
---@return string? err
function mcp.list_roots(ctx, opts) end

---Asks several requests in one round: one input_required round in the 2026-07-28 era, sent
---together (in the order of their keys) on the call's stream in the 2025 era.
---@param ctx mcp.Context
---@param requests table<string, mcp.InputRequest> the requests by key (the inputRequests keys)
---@return table<string, table>? results the results by key; nil when the round could not be asked at all (a stale ctx, say)
---@return table<string, string>|string|nil failed why each failed request failed, by key (nil when none did); the message when results is nil
function mcp.ask(ctx, requests) end

---Ends the call's HTTP stream early; the client resumes with GET + Last-Event-ID and receives the
---rest of the call's messages there (2025-11-25 SSE polling). A no-op on a plain JSON answer.
---@param ctx mcp.Context
function mcp.close_stream(ctx) end

---Makes the running `tools/call` a task (2026-07-28 extension `io.modelcontextprotocol/tasks`): the
---client is answered at once with the task's id and polls `tasks/get`; the handler runs on, and its
---result (or failure) becomes the task's. Progress and log messages are dropped from then on; a request
---to the client (`mcp.elicit`, ...) parks the task in `input_required` until `tasks/update` answers it.
---In a 2025-11-25 session the client asks for a task (`params.task`) and the call is one from its start:
---this returns true. Returns false, and the call goes on as an ordinary one, when it cannot be a task: a
---2025-era call whose client did not ask for one, a 2026-07-28 client that did not declare the extension, a tool without `execution.taskSupport`, a route that keeps
---as many tasks as it may (4,096; 512 per token subject). A second call returns what the first did.
---@param ctx mcp.Context
---@param opts {ttl_ms: integer?, poll_ms: integer?}? how long the task and its result stay (default 1 hour, at most a day), and the poll interval the client is told (default 500 ms, at least 50)
---@return boolean
function mcp.task(ctx, opts) end

---Marks `t` (or a new table) to encode as a JSON array, even when empty.
---@generic T: table
---@param t T?
---@return T
function mcp.array(t) end

---Marks `t` (or a new table) to encode as a JSON object, even when empty.
---@generic T: table
---@param t T?
---@return T
function mcp.object(t) end

---Encodes a Lua value as JSON text, by the same rules as results. Raises on cycles, functions, NaN.
---@param v any
---@return string
function mcp.json_encode(v) end

---Decodes JSON text; null becomes mcp.null, arrays and objects keep their markers. Raises on
---invalid JSON (wrap it in pcall for untrusted text).
---@param s string
---@return any
function mcp.json_decode(s) end

return mcp
