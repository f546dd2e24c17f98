-- Stateless: init({}) runs for every request; nothing persists.
return require("lib.fixture").server({})
