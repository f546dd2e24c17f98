//go:build race

package hostlib

// raceEnabled: the race detector drops a share of what is put in a
// sync.Pool, so regexp allocates a matcher for many of its matches and a
// search allocates far more than it does in a normal build.
const raceEnabled = true
