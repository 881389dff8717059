package lane

import (
	"time"

	"github.com/heraldhq/herald/backoff"
)

// Jitter is how a backoff is randomised (backoff.Jitter).
type Jitter = backoff.Jitter

// The jitter modes; see package backoff.
const (
	JitterFull  = backoff.JitterFull
	JitterEqual = backoff.JitterEqual
	JitterNone  = backoff.JitterNone
)

// Retry is a lane's retry policy.
type Retry struct {
	// Strategy names the backoff: exponential_backoff, the only one and
	// the default (a config file may spell it out).
	Strategy string `yaml:"strategy"`
	// Initial is the backoff after the first failure. Defaults to 5s.
	Initial time.Duration `yaml:"initial"`
	// Max caps the backoff. Defaults to 5m.
	Max time.Duration `yaml:"max"`
	// MaxAttempts is how many tries an event gets before it goes dead.
	// Defaults to 10.
	MaxAttempts int `yaml:"max_attempts"`
	// Jitter defaults to JitterFull.
	Jitter Jitter `yaml:"jitter"`
}

// StrategyExponential is Retry.Strategy's one value.
const StrategyExponential = "exponential_backoff"

// WithDefaults returns r with every unset setting at its default.
func (r Retry) WithDefaults() Retry {
	if r.Strategy == "" {
		r.Strategy = StrategyExponential
	}
	if r.Initial <= 0 {
		r.Initial = 5 * time.Second
	}
	if r.Max <= 0 {
		r.Max = 5 * time.Minute
	}
	if r.Max < r.Initial {
		r.Max = r.Initial
	}
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = 10
	}
	if r.Jitter == "" {
		r.Jitter = JitterFull
	}
	return r
}

// Backoff returns the wait after failed attempt number attempt (1-based):
// Initial doubled per earlier attempt, capped at Max without overflowing,
// then jittered (backoff.Policy).
func (r Retry) Backoff(attempt int) time.Duration {
	return backoff.Policy{Initial: r.Initial, Max: r.Max, Jitter: r.Jitter}.Delay(attempt)
}
