-- Reports what the sandbox lets a script see.
local mcp = require("mcp")

return {
  init = function()
    return { name = "sandbox", version = "1" }, { tools = {} }, {}
  end,

  tools = function()
    return { { name = "probe" }, { name = "require" }, { name = "print" }, { name = "load" } }
  end,

  handle_tool = function(name, args)
    if name == "probe" then
      return mcp.json_encode({
        io = type(io), debug = type(debug), channel = type(channel),
        dofile = type(dofile), loadfile = type(loadfile),
        collectgarbage = type(collectgarbage), gcinfo = type(gcinfo), getfenv = type(getfenv), setfenv = type(setfenv),
        module = type(module), newproxy = type(newproxy),
        os_execute = type(os.execute), os_exit = type(os.exit), os_getenv = type(os.getenv),
        os_remove = type(os.remove), os_time = type(os.time), os_clock = type(os.clock), os_date = type(os.date),
        string = type(string), table = type(table), math = type(math), coroutine = type(coroutine),
        load = type(load), loadstring = type(loadstring), pcall = type(pcall),
      })
    elseif name == "require" then
      local ok, mod = pcall(require, args.name)
      if ok then
        return type(mod) == "table" and (mod.greet and mod.greet("lua") or "table") or tostring(mod)
      end
      return nil, tostring(mod)
    elseif name == "print" then
      print("hello from", "lua", 42)
      return "printed"
    elseif name == "load" then
      local fn, err = load(args.code)
      if not fn then
        return nil, err
      end
      return tostring(fn())
    end
  end,
}
