-- Session mode with small pages, so every list is walked by cursor.
return require("lib.fixture").server({ sessions = true, page_size = 2 })
