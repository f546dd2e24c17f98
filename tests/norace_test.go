//go:build !race

package tests

// raceDetector reports a build with the race detector (see race_test.go).
const raceDetector = false

// raceSlowdown scales the liveness bounds (see race_test.go).
const raceSlowdown = 1
