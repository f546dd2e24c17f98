//go:build race

package tests

// raceDetector reports a build with the race detector, whose shadow memory
// is never given back to the OS: RSS then says nothing about leaks.
const raceDetector = true

// raceSlowdown scales the liveness bounds: the race detector makes Lua
// several times slower, and CI machines have two cores.
const raceSlowdown = 4
