package dbtest

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// UpgradeToAttemptErrors checks the outbox version that adds
// attempt_errors on a table as the version before it left it: version is
// the one that adds the column, and the table is made by migrating and
// then undoing that version by hand (dropping the column and the records
// of it and of any later version).
// A row that failed before the upgrade keeps its last error and has no
// history; with repeat, a migration repeated after a crash before its
// record (the column there, the record not) succeeds (SQLite's DDL commits
// with the record, so it cannot be left so); the next failure starts the
// history.
func UpgradeToAttemptErrors(t *testing.T, s store.Store, version int, repeat bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	table := Migrated(t, s, "herald_attempts")
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := s.DB().ExecContext(ctx, Bind(s, q), args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec("ALTER TABLE " + Quote(s, table) + " DROP COLUMN attempt_errors")
	exec("DELETE FROM herald_migrations WHERE table_name = ? AND version >= ?", table, version)
	Enqueue(t, s, table, herald.Event{ID: "failed-before", Topic: "t", Type: "T"})
	exec("UPDATE "+Quote(s, table)+" SET attempts = 1, last_error = ? WHERE event_id = ?", "old failure", "failed-before")
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if repeat {
		exec("DELETE FROM herald_migrations WHERE table_name = ? AND version >= ?", table, version)
		if err := s.Migrate(ctx, table); err != nil {
			t.Fatalf("upgrade repeated after a crash before its record: %v", err)
		}
	}
	if err := s.CheckTable(ctx, table); err != nil {
		t.Fatalf("the upgraded table: %v", err)
	}
	r, err := s.Get(ctx, table, "failed-before")
	if err != nil || r.LastError != "old failure" || len(r.Errors) != 0 {
		t.Fatalf("a row failed before the upgrade: last error %q, history %+v, %v", r.LastError, r.Errors, err)
	}
	recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: 5, Lease: time.Minute, Limit: 1})
	if err != nil || len(recs) != 1 {
		t.Fatalf("claim: %d rows, %v", len(recs), err)
	}
	if lost, err := s.Retry(ctx, store.Fence{Table: table, Token: 5}, []store.Failure{{ID: recs[0].ID, Error: "new failure"}}); err != nil || len(lost) != 0 {
		t.Fatalf("retry: lost %v, %v", lost, err)
	}
	r, err = s.Get(ctx, table, "failed-before")
	if err != nil || len(r.Errors) != 1 || r.Errors[0].Error != "new failure" || r.Errors[0].Attempt != 2 {
		t.Fatalf("the first failure after the upgrade: history %+v, %v", r.Errors, err)
	}
}
