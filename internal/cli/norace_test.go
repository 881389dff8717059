//go:build !race

package cli

// raceEnabled: see race_test.go.
const raceEnabled = false
