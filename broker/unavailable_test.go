package broker

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/heraldhq/herald"
)

// Rule: Unreachable recognizes a refused connection and a dial timeout
// from the real network stack, and nothing the broker could have said.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, refused := net.DialTimeout("tcp", addr, time.Second)
	if refused == nil || !Unreachable(refused) || !herald.IsUnavailable(MarkUnreachable(refused)) {
		t.Errorf("a refused connection (%v) is not unreachable", refused)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	_, timedOut := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if timedOut == nil || !Unreachable(timedOut) {
		t.Errorf("a dial that timed out (%v) is not unreachable", timedOut)
	}
	for _, err := range []error{nil, errors.New("WRONGTYPE"), herald.Permanent(errors.New("too large")), context.Canceled} {
		if Unreachable(err) {
			t.Errorf("%v reads as unreachable", err)
		}
	}
}
