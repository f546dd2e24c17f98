local t = nil
local x = t.field
return {}
