return {
  init = function()
    return {}
