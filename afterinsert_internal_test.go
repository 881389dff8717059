package herald

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// nopExecer accepts every statement.
type nopExecer struct{}

func (nopExecer) ExecContext(context.Context, string, ...any) (sql.Result, error) { return nil, nil }

// Rule: an Outbox runs its dialect's AfterInsert (PostgreSQL's NOTIFY) at
// most once per afterInsertEvery, however often it enqueues: a NOTIFY in
// every transaction would serialize the producers' commits.
func TestAfterInsertAtMostEvery(t *testing.T) {
	calls := 0
	d := Dialect{Name: "test", Quote: func(s string) string { return s }, Placeholder: func(int) string { return "?" },
		Now: "now()", Time: func(t time.Time) any { return t },
		AfterInsert: func(context.Context, Execer, string) error { calls++; return nil }}
	ob, err := NewOutbox(OutboxConfig{Dialect: d})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := ob.Enqueue(context.Background(), nopExecer{}, Event{Topic: "t", Type: "T"}); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Fatalf("AfterInsert ran %d times for 5 enqueues in a row, want 1", calls)
	}
	ob.afterInsertAt.Add(-int64(afterInsertEvery)) // as if afterInsertEvery had passed
	if err := ob.Enqueue(context.Background(), nopExecer{}, Event{Topic: "t", Type: "T"}); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("AfterInsert ran %d times, want 2 once afterInsertEvery passed", calls)
	}
}
