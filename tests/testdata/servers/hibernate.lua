-- Session mode whose sessions hibernate as soon as they are idle (1 ms):
-- every request finds its session asleep.
return require("lib.fixture").server({ sessions = true, session_hibernate_ms = 1 })
