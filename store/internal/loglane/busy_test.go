package loglane

import (
	"testing"
	"time"
)

// A Pace lingers only after a window that saw BusyRate commits a second,
// and stops once a window falls below it (an idle stream's long wait
// counts as one window).
func TestPaceLingersOnlyWhileBusy(t *testing.T) {
	var p Pace
	t0 := time.Unix(1000, 0)
	if got := p.Linger(t0); got != 0 {
		t.Fatalf("a new stream lingers %v, want 0", got)
	}
	commit := func(n int) {
		for range n {
			p.Committed()
		}
	}
	commit(BusyRate / 10 / 2) // half the busy rate over the window
	if got := p.Linger(t0.Add(busyWindow)); got != 0 {
		t.Fatalf("at half BusyRate the stream lingers %v, want 0", got)
	}
	commit(BusyRate / 10)
	if got := p.Linger(t0.Add(busyWindow + busyWindow/2)); got != 0 {
		t.Fatalf("judged before its window ended: linger %v, want 0", got)
	}
	if got := p.Linger(t0.Add(2 * busyWindow)); got != Linger {
		t.Fatalf("at BusyRate the stream lingers %v, want %v", got, Linger)
	}
	if got := p.Linger(t0.Add(2*busyWindow + time.Millisecond)); got != Linger {
		t.Fatalf("within a busy window the stream lingers %v, want %v", got, Linger)
	}
	if got := p.Linger(t0.Add(2*busyWindow + time.Second)); got != 0 {
		t.Fatalf("after a second without commits the stream lingers %v, want 0", got)
	}
}
