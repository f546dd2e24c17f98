local broken = require("lib.broken")
return {}
