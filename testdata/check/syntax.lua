return {
  init = function()
    return { name = "x" version = "1" }, {}, {}
  end,
}
