---@meta http
-- LuaLS stubs for `local http = require("http")`: HTTP requests to the hosts route.allow.http
-- grants. Every function returns its value, or nil and a message naming the cause (refused,
-- unreachable, timed out, too large); an HTTP 4xx/5xx status is a response, not a failure.

---@class http.Options
---The options every function takes: http.post's opts (its arguments set the url, the method and the body).
---@field query table<string, string|number|boolean|(string|number|boolean)[]>? appended to the URL, encoded
---@field headers table<string, string>? request headers (names are case-insensitive: two keys naming one header raise)
---@field timeout_ms integer? default 30000, never past the call's own deadline
---@field max_bytes integer? response body cap, default 10485760 (10 MiB); past it: nil, message
---@field follow_redirects boolean? default true (at most 10, each target checked against route.allow.http; headers other than Accept, Accept-Language, Content-Type, Content-Language and User-Agent do not follow a redirect to another host)

---@class http.GetOptions: http.Options
---http.get's opts (its arguments set the url and the method): http.Options and a body.
---@field body string? a raw body
---@field json any? a body encoded as JSON (sets content-type)
---@field form table<string, string|number|boolean>? a body encoded as a form (sets content-type)

---@class http.Request: http.GetOptions
---@field url string the URL (http or https)
---@field method string? default "GET"

---@class http.Response
---@field status integer the HTTP status
---@field headers table<string, string> lower-case names; repeated headers joined with ", "
---@field body string the body
---@field json any the decoded body when the content type is JSON, else nil
---@field url string the final URL, after redirects

---@class http
local http = {}

---Sends one request.
---@param req http.Request
---@return http.Response? res
---@return string? err e.g. "http: host evil.com is not allowed (route.allow.http)"
function http.request(req) end

---GET url. opts takes the fields of http.Request but url and method (given, they raise).
---@param url string
---@param opts http.GetOptions?
---@return http.Response? res
---@return string? err
function http.get(url, opts) end

---POST url with a body: a string is sent as it is, a table as JSON. opts takes the fields of
---http.Request but url, method, body, json and form (given, they raise).
---@param url string
---@param body string|table
---@param opts http.Options?
---@return http.Response? res
---@return string? err
function http.post(url, body, opts) end

---Sends the requests in parallel, at most 16 at a time, and returns { {res, err}, ... } in the
---order given (at most 1000 requests).
---@param reqs http.Request[]
---@return {[1]: http.Response?, [2]: string?}[]
function http.request_all(reqs) end

return http
