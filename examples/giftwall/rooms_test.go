package giftwall_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/examples/giftwall"
	"github.com/heraldhq/herald/store"
)

// TestRocketLaunchScheduledBeforeIgnitionPublished: when the broker gets
// a RocketIgnited message, its RocketLaunched event is in the outbox
// already, delayed to the ignition's launch time; the launch is published
// after the ignition, not before it is due, and only once.
func TestRocketLaunchScheduledBeforeIgnitionPublished(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		a := newApp(t, s, giftwall.Config{LaunchDelay: 300 * time.Millisecond})
		pub := memory.New(memory.Config{})
		var mu sync.Mutex
		var problems []string
		pub.SetHook(func(m broker.Message) error {
			mu.Lock()
			defer mu.Unlock()
			switch m.Event.Type {
			case giftwall.RocketIgnited:
				launch, err := giftwall.LaunchFor(m.Event)
				if err != nil {
					problems = append(problems, err.Error())
					break
				}
				rec, err := s.Get(context.Background(), a.Config().RoomTable, launch.ID)
				if err != nil {
					problems = append(problems, "ignition published before its launch was scheduled: "+err.Error())
				} else if rec.Event.Type != giftwall.RocketLaunched || rec.Status != store.StatusPending {
					problems = append(problems, "scheduled launch row is "+string(rec.Status)+" "+rec.Event.Type)
				}
			case giftwall.RocketLaunched:
				var p giftwall.RoomEvent
				_ = json.Unmarshal(m.Event.Payload, &p)
				// The database clock and this one are the same machine's;
				// allow for the millisecond columns' rounding.
				if early := time.UnixMilli(p.LaunchAt).Sub(time.Now()); early > 5*time.Millisecond {
					problems = append(problems, "launch published "+early.String()+" early")
				}
			}
			return nil
		})
		runRelay(t, s, nil, laneOf(a.Lanes(pub, 0), "room"))
		id, err := a.Rooms.IgniteRocket(ctx, "aurora", "r1", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if err := pub.WaitDistinct(waitCtx(t, 15*time.Second), 2); err != nil {
			t.Fatalf("ignition and launch not both published: %v (%d records)", err, len(pub.Records()))
		}
		mu.Lock()
		defer mu.Unlock()
		if len(problems) > 0 {
			t.Fatal(strings.Join(problems, "; "))
		}
		recs := pub.Records()
		if recs[0].Message.Event.ID != id || recs[1].Message.Event.Type != giftwall.RocketLaunched {
			t.Fatalf("published %s then %s; want the ignition, then its launch", recs[0].Message.Event.Type, recs[1].Message.Event.Type)
		}
	})
}

// TestFailingSchedulerKeepsIgnitionRetryable: while scheduling fails, the
// ignition is not published and stays pending with the error; once it
// succeeds the ignition goes out. A retry after a failed publish runs the
// step again, and the launch is still scheduled (and published) once.
func TestFailingSchedulerKeepsIgnitionRetryable(t *testing.T) {
	ctx := context.Background()
	s := backends[0].open(t)
	var calls atomic.Int32
	var failing atomic.Bool
	failing.Store(true)
	var a *giftwall.App
	a = newApp(t, s, giftwall.Config{LaunchDelay: 50 * time.Millisecond,
		Scheduler: func(ctx context.Context, launch herald.Event) error {
			calls.Add(1)
			if failing.Load() {
				return errors.New("delay service down")
			}
			tx, err := s.DB().BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			ob, _ := herald.NewOutbox(herald.OutboxConfig{Table: a.Config().RoomTable, Dialect: s.Dialect()})
			if err := ob.Enqueue(ctx, tx, launch); err != nil {
				tx.Rollback()
				return err
			}
			return tx.Commit()
		}})
	pub := memory.New(memory.Config{})
	runRelay(t, s, nil, laneOf(a.Lanes(pub, 0), "room"))
	id, err := a.Rooms.IgniteRocket(ctx, "aurora", "r1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the step never failed twice", func() bool { return calls.Load() >= 2 })
	rec, err := s.Get(ctx, a.Config().RoomTable, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(pub.Records()) != 0 || rec.Status == store.StatusDelivered || rec.Status == store.StatusDead ||
		!strings.Contains(rec.LastError, "delay service down") {
		t.Fatalf("[retryable] with the scheduler down: %d published, ignition %s (%q); want none published, retryable with the error",
			len(pub.Records()), rec.Status, rec.LastError)
	}
	// The scheduler recovers, but the broker loses the ignition twice: the
	// step runs three more times, scheduling the same launch each time.
	pub.FailEvent(id, 2, errors.New("broker hiccup"))
	failing.Store(false)
	if err := pub.WaitDistinct(waitCtx(t, 15*time.Second), 2); err != nil {
		t.Fatalf("ignition and launch not both published: %v", err)
	}
	ign, err := s.Get(ctx, a.Config().RoomTable, id)
	if err != nil {
		t.Fatal(err)
	}
	launch, _ := giftwall.LaunchFor(ign.Event)
	if n := pub.Count(launch.ID); n != 1 || pub.Count(id) != 1 || len(pub.Records()) != 2 {
		t.Fatalf("[idempotent] launch published %d times, %d messages in all; want 1 and 2", n, len(pub.Records()))
	}
	if c := calls.Load(); c < 5 {
		t.Fatalf("the step ran %d times, want at least 5 (2 failed, 3 around the broker's failures)", c)
	}
}

func waitCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
