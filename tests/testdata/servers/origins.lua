-- Only pages from http://allowed.example may call.
return require("lib.fixture").server({ origins = { "http://allowed.example" } })
