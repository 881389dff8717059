//go:build race

package projectortest

// raceEnabled scales RunSource down under the race detector, which slows
// the pure-Go SQLite driver tenfold.
const raceEnabled = true
