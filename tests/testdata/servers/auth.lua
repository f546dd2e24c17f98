-- Bearer-token auth: no token is 401, a wrong one 403.
return require("lib.fixture").server({ sessions = true }, {
  auth = function(request)
    local header = request.headers["authorization"]
    if header == "Bearer test-token" then
      return true
    elseif header == nil then
      return false
    end
    return 403
  end,
})
