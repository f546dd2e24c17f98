---@meta fs
-- LuaLS stubs for `local fs = require("fs")`: files in the folders route.allow.read (read-only)
-- and route.allow.write (read-write) grant. A relative path is taken from the scripts folder; a
-- path may never leave its folder, through ".." or a symbolic link. Every function returns its
-- value, or nil and a message, e.g. "fs: data/x.txt: not found", "fs: data/../x escapes its root".

---@class fs.Entry
---@field name string
---@field dir boolean
---@field size integer bytes
---@field modified integer Unix seconds

---@class fs.Stat
---@field size integer bytes
---@field dir boolean
---@field modified integer Unix seconds

---@class fs
local fs = {}

---Reads a whole file (default cap 64 MiB).
---@param path string
---@param opts {max_bytes: integer?}?
---@return string? data
---@return string? err
function fs.read(path, opts) end

---Writes a file atomically (a temporary file, then a rename), creating its folders. A symbolic
---link is written through: its target is replaced, the link kept.
---@param path string
---@param data string
---@return true? ok
---@return string? err
function fs.write(path, data) end

---Appends to a file, creating it and its folders.
---@param path string
---@param data string
---@return true? ok
---@return string? err
function fs.append(path, data) end

---Lists a folder, sorted by name; a symbolic link is described as fs.stat describes it.
---@param dir string
---@return fs.Entry[]? entries
---@return string? err
function fs.list(dir) end

---@param path string
---@return fs.Stat? stat
---@return string? err exactly "not found" when it does not exist; other failures name the module
function fs.stat(path) end

---Removes a file or an empty folder.
---@param path string
---@return true? ok
---@return string? err
function fs.remove(path) end

---Creates a folder and its parents (an existing one is fine).
---@param path string
---@return true? ok
---@return string? err
function fs.mkdir(path) end

---@param path string
---@return boolean? exists
---@return string? err when the path is not allowed
function fs.exists(path) end

return fs
