package loglane

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

// fakeLog is a log of messages: an event ("e") or a commit ("c").
type fakeLog struct {
	msgs      []string
	keepAlive int
}

func (f *fakeLog) steps() Steps[string] {
	return Steps[string]{
		KeepAlive: func(context.Context) error { f.keepAlive++; return nil },
		Receive: func(context.Context, time.Time) (string, bool, error) {
			if len(f.msgs) == 0 {
				return "", false, nil
			}
			m := f.msgs[0]
			f.msgs = f.msgs[1:]
			return m, true, nil
		},
		Handle: func(m string, b *store.LogBatch) (bool, error) {
			if m == "e" {
				b.Records = append(b.Records, store.Record{})
				return false, nil
			}
			b.End++
			return true, nil
		},
	}
}

// Fill ends a batch at the first commit that reaches the limit, leaving
// the next transaction to the next call, and says when it stopped for
// lack of messages.
func TestFillStopsAtTheCommitThatReachesTheLimit(t *testing.T) {
	f := &fakeLog{msgs: []string{"e", "e", "c", "e", "e", "c", "e", "c"}}
	var b store.LogBatch
	idle, err := Fill(context.Background(), f.steps(), &b, 3, time.Minute)
	if err != nil || idle || len(b.Records) != 4 || b.End != 2 || len(f.msgs) != 2 {
		t.Fatalf("first batch: %d records, end %d, idle %v, %v, %d messages left; want 4, 2, false, nil, 2",
			len(b.Records), b.End, idle, err, len(f.msgs))
	}
	b = store.LogBatch{}
	idle, err = Fill(context.Background(), f.steps(), &b, 3, time.Minute)
	if err != nil || !idle || len(b.Records) != 1 || b.End != 1 {
		t.Fatalf("second batch: %d records, end %d, idle %v, %v; want 1, 1, true, nil", len(b.Records), b.End, idle, err)
	}
	if f.keepAlive != 9 {
		t.Errorf("KeepAlive ran %d times, want once before each of 9 receives (6, then 2 and an empty one)", f.keepAlive)
	}
}

// A failing KeepAlive (a lost lease) ends Next at once.
func TestFillStopsOnKeepAliveError(t *testing.T) {
	lost := errors.New("lease lost")
	s := (&fakeLog{msgs: []string{"e", "c"}}).steps()
	s.KeepAlive = func(context.Context) error { return lost }
	var b store.LogBatch
	if idle, err := Fill(context.Background(), s, &b, 10, time.Minute); !errors.Is(err, lost) || idle || len(b.Records) != 0 {
		t.Fatalf("got idle %v, %v, %d records; want the KeepAlive error and nothing read", idle, err, len(b.Records))
	}
}

func inTx(_ context.Context, f func(tx *sql.Tx) error) error { return f(nil) }

// The recorded position only moves forward, even when batches are
// recorded out of order; Next's side takes it once, renewing nothing.
func TestPositionRecordNeverMovesBack(t *testing.T) {
	var p Position
	p.Start(10)
	if p.CatchUp() {
		t.Error("CatchUp moved a position nothing recorded")
	}
	none := func(*sql.Tx) error { return nil }
	for _, end := range []uint64{30, 20} {
		if err := p.Record(context.Background(), end, inTx, none, none); err != nil {
			t.Fatal(err)
		}
	}
	if !p.CatchUp() || p.Confirmed != 30 {
		t.Fatalf("confirmed %d after recording 30 then 20, want 30", p.Confirmed)
	}
	failed := errors.New("fenced")
	if err := p.Record(context.Background(), 40, inTx, none, func(*sql.Tx) error { return failed }); !errors.Is(err, failed) {
		t.Fatalf("Record with a lost lease: %v", err)
	}
	if p.CatchUp() {
		t.Errorf("a failed Record moved the position to %d", p.Confirmed)
	}
}

// KeepLease renews only once lease/3 passed since the last renewal, with
// the confirmed position.
func TestPositionKeepLease(t *testing.T) {
	var p Position
	p.Start(7)
	var renewed []uint64
	renew := func(_ context.Context, pos uint64) error { renewed = append(renewed, pos); return nil }
	if err := p.KeepLease(context.Background(), time.Hour, renew); err != nil || len(renewed) != 0 {
		t.Fatalf("renewed %v (%v) right after the lease was taken", renewed, err)
	}
	p.LastRenew = time.Now().Add(-21 * time.Minute)
	if err := p.KeepLease(context.Background(), time.Hour, renew); err != nil || len(renewed) != 1 || renewed[0] != 7 {
		t.Fatalf("renewed %v (%v) after lease/3, want [7]", renewed, err)
	}
	if time.Since(p.LastRenew) > time.Minute {
		t.Error("LastRenew not moved by the renewal")
	}
}

// Fill with no linger takes the transactions already held after a commit
// (Receive called with its deadline passed) and never waits for more; with
// a linger it waits that long and no longer than the caller's wait.
func TestFillLingersOnlyAsAsked(t *testing.T) {
	for _, linger := range []time.Duration{0, time.Millisecond} {
		f := &fakeLog{msgs: []string{"e", "c", "e", "c"}}
		steps := f.steps()
		steps.Linger = linger
		receive := steps.Receive
		var waited time.Duration
		steps.Receive = func(ctx context.Context, deadline time.Time) (string, bool, error) {
			if len(f.msgs) == 0 {
				waited = max(waited, time.Until(deadline))
			}
			return receive(ctx, deadline)
		}
		var b store.LogBatch
		if _, err := Fill(context.Background(), steps, &b, 100, time.Hour); err != nil || len(b.Records) != 2 {
			t.Fatalf("linger %v: %d records, %v; want both transactions", linger, len(b.Records), err)
		}
		if waited > linger {
			t.Errorf("linger %v: Fill would have waited %v for more after a commit", linger, waited)
		}
	}
}
