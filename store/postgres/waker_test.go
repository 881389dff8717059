package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
	"github.com/heraldhq/herald/store/postgres"
)

// waitWakeup fails the test unless ch receives within d.
func waitWakeup(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("%s: wakeup channel closed", what)
		}
	case <-time.After(d):
		t.Fatalf("%s: no wakeup within %v", what, d)
	}
}

// drain empties ch of a pending signal.
func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

func TestWakeupsOnCommitOnly(t *testing.T) {
	s, table := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := s.Wakeups(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		for range ch { //nolint:revive // wait for the listener to stop
		}
	}()
	// A rolled-back enqueue notifies nobody.
	ob, _ := herald.NewOutbox(herald.OutboxConfig{Dialect: postgres.Dialect, Table: table})
	tx, err := s.DB().Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Enqueue(ctx, tx, herald.Event{Topic: "t", Type: "A", Payload: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback()
	dbtest.Enqueue(t, s, table, herald.Event{Topic: "t", Type: "A", Payload: []byte("2")})
	waitWakeup(t, ch, 5*time.Second, "after a commit")
	select {
	case <-ch:
		t.Fatal("two wakeups for one commit (the rolled-back transaction must not notify)")
	case <-time.After(100 * time.Millisecond):
	}
}

// TestWakeupsReconnect kills the listener's session; the listener must
// reconnect, signal once (events may have committed meanwhile), and hear
// later commits again.
func TestWakeupsReconnect(t *testing.T) {
	s, table := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := s.Wakeups(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		for range ch { //nolint:revive // wait for the listener to stop
		}
	}()
	res, err := s.DB().Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE application_name = 'herald-wakeups' AND query LIKE '%` + postgres.NotifyChannel(table) + `%'`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("terminated %d listener sessions, want 1", n)
	}
	waitWakeup(t, ch, 10*time.Second, "after the listener's session was killed")
	drain(ch)
	dbtest.Enqueue(t, s, table, herald.Event{Topic: "t", Type: "A", Payload: []byte("1")})
	waitWakeup(t, ch, 5*time.Second, "after a commit on the new session")
}

func TestWakeupsClosedWithContext(t *testing.T) {
	s, table := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := s.Wakeups(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("channel not closed after the context ended")
		}
	}
}

// TestEnqueuePgxTx enqueues on a pgx.Tx: the rows and the NOTIFY go with
// the caller's commit, and a rollback leaves nothing.
func TestEnqueuePgxTx(t *testing.T) {
	s, table := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := s.Wakeups(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		for range ch { //nolint:revive // wait for the listener to stop
		}
	}()
	conn, err := pgx.Connect(ctx, testenv.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	kept := herald.Event{ID: herald.NewID(), Topic: "t", Type: "Kept", PartitionKey: "k", Payload: []byte("p"),
		Headers: map[string]string{"h": "v"}}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := postgres.Enqueue(ctx, tx, table, kept, kept); err != nil {
		t.Fatalf("Enqueue on a pgx.Tx: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitWakeup(t, ch, 5*time.Second, "after a pgx.Tx commit")

	gone := herald.Event{ID: herald.NewID(), Topic: "t", Type: "Gone", Payload: []byte("p")}
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := postgres.Enqueue(ctx, tx, table, gone); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := postgres.Enqueue(ctx, tx, table, gone); err == nil {
		t.Error("Enqueue on a finished pgx.Tx succeeded")
	}
	if _, err := s.Get(ctx, table, gone.ID); err == nil {
		t.Error("a rolled-back pgx.Tx left its event behind")
	}
	r, err := s.Get(ctx, table, kept.ID)
	if err != nil || r.Event.Headers["h"] != "v" || r.Event.PartitionKey != "k" || string(r.Event.Payload) != "p" {
		t.Fatalf("Get(kept) = %+v, %v", r, err)
	}
	forwarded := herald.Event{ID: herald.NewID(), Topic: "t", Type: "T", Headers: map[string]string{"ce-type": "Forwarded"}}
	if err := postgres.Enqueue(ctx, nil, table, forwarded); !errors.Is(err, herald.ErrReservedHeader) ||
		!strings.Contains(err.Error(), `"ce-type"`) {
		t.Errorf("Enqueue of a reserved header = %v, want herald.ErrReservedHeader naming it", err)
	}
	if err := postgres.Enqueue(ctx, nil, "bad name;", kept); err == nil {
		t.Error("Enqueue accepted an invalid table name")
	}
	st, err := s.Stats(ctx, store.Scope{Table: table})
	if err != nil || st.Pending != 1 {
		t.Errorf("stats %+v, %v; want 1 pending (a duplicate event id is skipped)", st, err)
	}
}
