package herald_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/heraldhq/herald"
)

// Rule: Unavailable marks an error as "the broker is not there" through
// any wrapping, keeps an ambiguous error ambiguous, and never outranks a
// permanent one.
func TestUnavailable(t *testing.T) {
	base := errors.New("connection refused")
	u := herald.Unavailable(base)
	wrapped := fmt.Errorf("event e1: %w", u)
	switch {
	case !herald.IsUnavailable(wrapped) || !errors.Is(wrapped, herald.ErrUnavailable) || !errors.Is(wrapped, base):
		t.Errorf("a wrapped Unavailable error is not recognized: %v", wrapped)
	case herald.Unavailable(nil) != nil:
		t.Error("Unavailable(nil) is not nil")
	case herald.Unavailable(u) != u:
		t.Error("Unavailable wraps an unavailable error twice")
	case herald.IsUnavailable(base) || herald.IsUnavailable(herald.Ambiguous(base)):
		t.Error("a plain or ambiguous error reads as unavailable")
	case !herald.IsAmbiguous(herald.Unavailable(herald.Ambiguous(base))):
		t.Error("an ambiguous error stops being ambiguous once marked unavailable")
	case herald.IsUnavailable(herald.Permanent(u)):
		t.Error("a permanent error reads as unavailable: it is about the event")
	}
}
