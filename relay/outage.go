package relay

import (
	"context"
	"errors"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// judgeRound tells the lane's breaker what a publish round says about the
// broker, and reports whether the broker is down: then the round's
// unavailable results are released without spending their attempts.
//
// Any answer about an event, a delivery or a refusal of that event (too
// large, invalid, nacked), shows the broker is there: the breaker closes,
// and unavailable results of the same round count as ordinary failures,
// so an event the broker never answers for cannot loop forever without
// spending attempts. A round with no answer at all, only errors saying the
// broker is not there, opens the breaker.
func (b *batch) judgeRound(results []broker.Result) (down bool) {
	var unavailable error
	for _, r := range results {
		switch {
		case r.Err == nil || herald.IsPermanent(r.Err):
			b.w.breaker.answered()
			return false
		case herald.IsUnavailable(r.Err):
			if unavailable == nil {
				unavailable = r.Err
			}
		case neutral(r.Err):
		default:
			b.w.breaker.answered() // a retryable refusal of this event
			return false
		}
	}
	if unavailable == nil {
		return false
	}
	b.w.breaker.unreachable(unavailable, b.probe)
	return true
}

// neutral reports whether err says nothing about the broker: a message
// held back behind its key's failed one, or the deadline passing before it
// was sent.
func neutral(err error) bool {
	return errors.Is(err, broker.ErrHeldBack) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled)
}
