//go:build race

package testenv

// RaceEnabled is true when the race detector is on: tests that move tens
// of thousands of events scale down under it (and say so).
const RaceEnabled = true
