local M = {}
function M.f(
return M
