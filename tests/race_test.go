//go:build race

package tests

// raceDetector reports a build with the race detector, whose shadow memory
// is never given back to the OS: RSS then says nothing about leaks.
const raceDetector = true
