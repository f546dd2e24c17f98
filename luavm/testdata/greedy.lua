-- A budget larger than the process ceiling of the watchdog tests.
return {
  route = { memory_limit_mb = 8192 },
  init = function() return { name = "greedy", version = "1" }, { tools = {} }, {} end,
  tools = function() return { { name = "alloc" }, { name = "spin" } } end,
  handle_tool = function(name)
    if name == "spin" then
      while true do end
    end
    local t, i = {}, 0
    while true do
      i = i + 1
      t[i] = string.rep("x", 4096) .. i
    end
  end,
}
