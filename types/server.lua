---@meta luamcp
-- LuaLS type stubs for the table a luamcp script returns (its server module).
-- Annotate it with `---@type luamcp.Server` to get completion and checks:
--
--   ---@type luamcp.Server
--   return { init = function(params) ... end, ... }

---@class luamcp.Route
---Route options. An unknown key or a value of the wrong type makes the script fail to load.
---Under `luamcp serve`, changing `path`, `sessions` or any other option on a running script
---remounts its route: its sessions end with reason "normal".
---@field path string? mount path (default "/mcp/<file name>"); starts with /, no { } ? #
---@field sessions boolean? true: session mode (default false: stateless)
---@field origins string[]? allowed Origin values (default {}: any Origin gets 403)
---@field allow_remote_access boolean? let non-loopback peers and Host values in (default false)
---@field page_size integer? page size of every */list result (default 50, >= 1)
---@field max_sessions integer? live sessions on this route (default unlimited)
---@field session_ttl_ms integer? idle session reaping (default 300000)
---@field request_timeout_ms integer? how long a buffered caller waits (default 60000)
---@field session_max_pending integer? queued requests per session (default 100)
---@field session_keepalive_ms integer? GET-channel keep-alive comment period (default 30000; 0 off)
---@field session_buffer_max integer? GET-channel events kept for Last-Event-ID replay (default 256)

---@class luamcp.ServerInfo
---@field name string
---@field version string
---@field title string?
---@field description string?
---@field website_url string?
---@field icons table[]?
---@field instructions string? sent at the top level of the initialize result

---@class luamcp.Tool
---@field name string 1-128 characters of A-Za-z0-9_.-
---@field description string
---@field input_schema table a JSON Schema whose root is type = "object"
---@field title string?
---@field output_schema table?
---@field annotations table?
---@field icons table[]?
---@field _meta table?

---@class luamcp.ToolResult
---@field content table[] content blocks, passed through
---@field structured_content table?

---@class luamcp.Resource
---@field uri string
---@field name string
---@field title string?
---@field description string?
---@field mime_type string?
---@field size integer?

---@class luamcp.ResourceTemplate
---@field uri_template string e.g. "notes://{id}"
---@field name string
---@field title string?
---@field description string?
---@field mime_type string?

---@class luamcp.Prompt
---@field name string
---@field title string?
---@field description string?
---@field arguments {name: string, description: string?, required: boolean?}[]?

---@class luamcp.AuthRequest
---@field method string
---@field path string
---@field headers table<string, string> lower-case names
---@field remote_addr string

---@class luamcp.InitParams
---The client's initialize params; {} for a stateless request that is not an initialize, and
---when luamcp lists the tools at mount time or runs `luamcp check`.
---@field protocolVersion string?
---@field capabilities table?
---@field clientInfo {name: string, version: string}?
---@field mcp_session_id string? the new session's id (session mode only)

---@class luamcp.Capabilities
---Sent as given; only the presence of a key gates methods. Advertising resources, prompts or
---completions requires their callbacks (read_resource, get_prompt, complete).
---@field tools table?
---@field resources {subscribe: boolean?, listChanged: boolean?}?
---@field prompts {listChanged: boolean?}?
---@field logging table?
---@field completions table?

---@class luamcp.Server
---The table a script returns. init, tools and handle_tool are required. A callback replies with
---a value, fails in-band with `nil, message`, or crashes with error() (the client gets -32603,
---the log gets file:line and the traceback). Returning a state after the result (or after the
---error message) replaces the session state; otherwise in-place changes stay, and a crash
---rolls them back. On a hot reload, live sessions keep their state and run the new code from
---their next call.
---@field route luamcp.Route?
---@field auth (fun(request: luamcp.AuthRequest): boolean|integer|nil)? true passes; false/nil 401; a number is the status
---@field init fun(params: luamcp.InitParams): luamcp.ServerInfo, luamcp.Capabilities?, any returns server info, capabilities, state
---@field tools fun(state: table): luamcp.Tool[]
---@field handle_tool fun(name: string, args: table, ctx: mcp.Context, state: table): (string|luamcp.ToolResult|nil), any?, table?
---@field resources (fun(state: table): luamcp.Resource[])?
---@field resource_templates (fun(state: table): luamcp.ResourceTemplate[])?
---@field read_resource (fun(uri: string, state: table, vars: table<string, string>): (string|{contents: table[]}|nil), any?, table?)?
---@field prompts (fun(state: table): luamcp.Prompt[])?
---@field get_prompt (fun(name: string, args: table, state: table): ({messages: table[], description: string?}|nil), any?, table?)?
---@field complete (fun(ref: table, argument: {name: string, value: string}, state: table, context: table): string[], table?)?
---@field channels (fun(state: table): string[])?
---@field terminate (fun(reason: "normal"|"shutdown", state: table))? "normal": DELETE, idle expiry, or the script removed; "shutdown": the server stops
