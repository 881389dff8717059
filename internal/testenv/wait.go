package testenv

import (
	"testing"
	"time"
)

// WaitFor polls cond every interval until it holds, failing t with what
// when timeout passes first. Tests wait on an observable condition with a
// deadline instead of sleeping a fixed time.
func WaitFor(t testing.TB, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if t.Failed() {
			// Something the test runs in the background (a relay that
			// refused to start) already failed it: waiting on is no use.
			t.Fatalf("gave up waiting for %s: the test has failed", what)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(interval)
	}
}
