package sqltx

import (
	"testing"
	"time"
)

func TestTxBound(t *testing.T) {
	for lease, want := range map[time.Duration]time.Duration{
		100 * time.Millisecond: time.Second,
		time.Second:            time.Second,
		2 * time.Second:        time.Second,
		3 * time.Second:        time.Second,
		5 * time.Second:        2 * time.Second,
		9 * time.Second:        4 * time.Second,
		30 * time.Second:       5 * time.Second,
		time.Hour:              5 * time.Second,
	} {
		if got := TxBound(lease); got != want {
			t.Errorf("TxBound(%v) = %v, want %v", lease, got, want)
		}
	}
}

func TestSmallestBound(t *testing.T) {
	var b SmallestBound
	if got := b.Get(); got != maxTxBound {
		t.Fatalf("before any claim: %v, want %v", got, maxTxBound)
	}
	steps := []struct{ lease, want time.Duration }{
		{time.Minute, 5 * time.Second}, {6 * time.Second, 3 * time.Second}, {time.Minute, 3 * time.Second},
	}
	for _, s := range steps {
		if got := b.Note(s.lease); got != s.want || b.Get() != s.want {
			t.Fatalf("Note(%v) = %v, Get %v; want %v", s.lease, got, b.Get(), s.want)
		}
	}
}
