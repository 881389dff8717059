package herald

import "errors"

// ErrInvalidEvent is returned by Enqueue for an event missing a required field.
var ErrInvalidEvent = errors.New("herald: invalid event")

// ErrReservedHeader is returned by Enqueue, wrapped with ErrInvalidEvent,
// for a user header named like one Herald sets itself (ReservedHeader): a
// copied "Ce-Id" would otherwise travel next to the event's own ce-id.
var ErrReservedHeader = errors.New("reserved header")

// ErrPayloadTooLarge is returned by Enqueue, and by publishers, for a payload
// over the configured limit. It is permanent: retrying cannot help.
var ErrPayloadTooLarge = errors.New("herald: payload too large")

// PermanentError marks a failure that no retry can fix (a message the broker
// will never accept, a 4xx from a webhook). The relay moves the event to dead
// at once instead of retrying it.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err as a PermanentError. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err, or anything it wraps, is permanent:
// a PermanentError or ErrPayloadTooLarge.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p) || errors.Is(err, ErrPayloadTooLarge)
}

// AmbiguousError marks a failure after which the message may or may not have
// reached the broker (a timeout waiting for the ack, a connection lost after
// sending). The relay retries it like any retryable error; consumers dedupe
// by event id. The distinction is kept for logs and metrics.
type AmbiguousError struct{ Err error }

func (e *AmbiguousError) Error() string { return "ambiguous: " + e.Err.Error() }
func (e *AmbiguousError) Unwrap() error { return e.Err }

// Ambiguous wraps err as an AmbiguousError. Ambiguous(nil) is nil.
func Ambiguous(err error) error {
	if err == nil {
		return nil
	}
	return &AmbiguousError{Err: err}
}

// IsAmbiguous reports whether err, or anything it wraps, is an AmbiguousError.
func IsAmbiguous(err error) bool {
	var a *AmbiguousError
	return errors.As(err, &a)
}

// ErrUnavailable matches (errors.Is) every UnavailableError.
var ErrUnavailable = errors.New("herald: broker unavailable")

// UnavailableError marks a failure that says the broker is not there
// (connection refused or reset, no answer at all, no stream leader, a
// closed channel, a 502/503/504 from a webhook's gateway) rather than
// anything about the event. The relay does not spend the event's attempt on
// it: it opens the broker's breaker, releases the lane's claimed rows and
// probes the broker until it answers. It may wrap an AmbiguousError when the
// message may have been sent before the broker went away.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return "broker unavailable: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unavailable wraps err as an UnavailableError. Unavailable(nil) is nil;
// an error that is already unavailable is returned as is.
func Unavailable(err error) error {
	if err == nil || IsUnavailable(err) {
		return err
	}
	return &UnavailableError{Err: err}
}

// IsUnavailable reports whether err, or anything it wraps, says the broker
// is unavailable. A permanent error never is: it is about the event.
func IsUnavailable(err error) bool {
	return errors.Is(err, ErrUnavailable) && !IsPermanent(err)
}
