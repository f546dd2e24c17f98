-- Session mode served behind a reverse proxy (nginx): remote Host headers allowed.
return require("lib.fixture").server({ sessions = true, allow_remote_access = true })
