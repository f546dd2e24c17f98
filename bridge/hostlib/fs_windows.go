package hostlib

// openDirOnly makes an open fail unless it names a directory: on Windows
// no flag does, and none is needed (a named pipe is not a file of a
// folder).
const openDirOnly = 0
