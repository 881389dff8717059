package giftwall

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// ErrInjected is the failure Flaky reports for a message it refused.
var ErrInjected = errors.New("giftwall: injected broker failure")

// Flaky wraps a Publisher and fails a fraction of the messages without
// sending them, as a broker outage would: a retryable error, so the relay
// retries them with backoff. It keeps the publisher contract: after a
// message of a partition key fails, the later messages of that key in the
// same batch are not sent either, so a retry is never overtaken.
type Flaky struct {
	inner  broker.Publisher
	rate   float64
	failed atomic.Int64
}

var _ broker.Publisher = (*Flaky)(nil)

// NewFlaky returns inner failing each message with probability rate (0 to 1).
func NewFlaky(inner broker.Publisher, rate float64) (*Flaky, error) {
	if rate < 0 || rate > 1 {
		return nil, fmt.Errorf("giftwall: fail rate %v is not between 0 and 1", rate)
	}
	return &Flaky{inner: inner, rate: rate}, nil
}

// Failed is how many messages Flaky has refused so far.
func (f *Flaky) Failed() int64 { return f.failed.Load() }

// Publish implements broker.Publisher.
func (f *Flaky) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	results := make([]broker.Result, len(msgs))
	var held map[string]bool
	send := make([]int, 0, len(msgs))
	for i, m := range msgs {
		key := m.Event.PartitionKey
		switch {
		case key != "" && held[key]:
			results[i].Err = fmt.Errorf("event %s not sent: an earlier message of key %q failed", m.Event.ID, key)
		case f.rate > 0 && rand.Float64() < f.rate:
			f.failed.Add(1)
			results[i].Err = fmt.Errorf("event %s: %w", m.Event.ID, ErrInjected)
			if key != "" {
				if held == nil {
					held = map[string]bool{}
				}
				held[key] = true
			}
		default:
			send = append(send, i)
		}
	}
	if len(send) == 0 {
		return results
	}
	out := make([]broker.Message, len(send))
	for j, i := range send {
		out[j] = msgs[i]
	}
	got := f.inner.Publish(ctx, out)
	for j, i := range send {
		if j < len(got) {
			results[i] = got[j]
		} else {
			results[i].Err = herald.Ambiguous(fmt.Errorf("event %s: the publisher returned no result", msgs[i].Event.ID))
		}
	}
	return results
}

// MaxPayload passes the inner publisher's limit on (broker.Limiter).
func (f *Flaky) MaxPayload() int {
	if l, ok := f.inner.(broker.Limiter); ok {
		return l.MaxPayload()
	}
	return 0
}

// Close closes the inner publisher.
func (f *Flaky) Close() error { return f.inner.Close() }
