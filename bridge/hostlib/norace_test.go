//go:build !race

package hostlib

const raceEnabled = false
