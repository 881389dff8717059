package relay

import "time"

// BatchStats is what one worker pass did.
type BatchStats struct {
	Lane      string
	Worker    string
	Claimed   int
	Delivered int
	Retried   int
	Dead      int
	Discarded int
	Released  int
	// Lost counts rows whose lease another worker took over before the mark.
	Lost int
	// Duplicates counts deliveries the broker reported as duplicates.
	Duplicates int
	// Claim, Publish and Mark are how long each step took.
	Claim, Publish, Mark time.Duration
}

// Observer is told about every pass that claimed something, for metrics and
// tests. Its methods must be quick and safe for concurrent use.
type Observer interface {
	BatchDone(BatchStats)
}

type nopObserver struct{}

func (nopObserver) BatchDone(BatchStats) {}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(BatchStats)

// BatchDone calls f.
func (f ObserverFunc) BatchDone(s BatchStats) { f(s) }
