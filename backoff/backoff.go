// Package backoff is the one retry spacing Herald uses: exponential from an
// initial wait, capped, overflow-safe, and randomised by a jitter mode. The
// relay spaces a failed event's publishes with it, the projector a failed
// event's applications.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Jitter is how a wait is randomised.
type Jitter string

// The jitter modes. Full jitter (AWS's "full jitter") spreads retries of a
// failed burst evenly over [0, wait]; equal keeps at least half of it;
// none waits exactly.
const (
	JitterFull  Jitter = "full"
	JitterEqual Jitter = "equal"
	JitterNone  Jitter = "none"
)

// Policy is an exponential backoff. Its users give it their defaults.
type Policy struct {
	// Initial is the wait after the first failure.
	Initial time.Duration `yaml:"initial"`
	// Max caps the wait.
	Max time.Duration `yaml:"max"`
	// Jitter randomises the wait; empty means none.
	Jitter Jitter `yaml:"jitter,omitempty"`
}

// Delay returns the wait after failed attempt number attempt (1-based):
// Initial doubled per earlier attempt, capped at Max without overflowing,
// then jittered.
func (p Policy) Delay(attempt int) time.Duration {
	d := p.Initial
	for i := 1; i < attempt && d < p.Max; i++ {
		d *= 2
		if d <= 0 { // overflowed: Max is at least this large
			d = p.Max
		}
	}
	d = max(min(d, p.Max), 0)
	switch p.Jitter {
	case JitterFull:
		return rand.N(d + 1)
	case JitterEqual:
		return d/2 + rand.N(d-d/2+1)
	}
	return d
}
