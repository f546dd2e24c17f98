return { count = function(n) return "count " .. n end }
