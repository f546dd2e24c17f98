-- Session mode where block and sleep are concurrent tools: their calls run
-- on a copy of the state, beside the session's queue, and what they change
-- is dropped.
return require("lib.fixture").server({ sessions = true, concurrent_tools = { "block", "sleep" } })
