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
	// Stranded counts, on log lanes, rows the log had passed without
	// settling them, found by the stray check and handed to the polling
	// workers (LogReader.Strays).
	Stranded int
	// MarksGone counts, on log lanes, delivered rows that were no longer in
	// the table when their mark was applied (deleted before it).
	MarksGone int
	// Claim, Publish and Mark are how long each step took.
	Claim, Publish, Mark time.Duration
	// CommitToAck holds, for each delivered event, the time from when it
	// became due to the broker's ack: how long its row had been due when
	// claimed (store.Record.DueFor, on the database clock) plus the time
	// from the claim's start to the ack (this process's monotonic clock).
	// An event due at once is due from its insert; a delayed one, a retry
	// or an expired lease from its available_at at the claim. On a log lane
	// it counts from the transaction's commit.
	CommitToAck []time.Duration
}

// Observer is told about every pass that claimed something (and about a
// log lane's marks and stray checks that found something), for metrics and
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
