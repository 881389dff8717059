//go:build race

package cli

// raceEnabled: the race detector slows the pure-Go SQLite driver tenfold,
// so tests that run whole programs build a plain binary to run instead.
const raceEnabled = true
