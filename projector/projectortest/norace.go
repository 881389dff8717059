//go:build !race

package projectortest

const raceEnabled = false
