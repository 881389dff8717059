package testenv

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// TrappedCommit is a transaction held between its commit record and its
// visibility on a server started with CommitTrap.
type TrappedCommit struct {
	db   *sql.DB
	pid  int
	done chan error
}

// TrapCommit runs stmts (with args, one slice per statement) in one
// transaction on a connection of db that waits for synchronous replication,
// commits it, and returns once the commit is in the WAL and waiting: other
// sessions do not see its rows yet, the log does. Release lets it finish.
func TrapCommit(t testing.TB, db *sql.DB, stmts []string, args ...[]any) *TrappedCommit {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tc := &TrappedCommit{db: db, done: make(chan error, 1)}
	if err := conn.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&tc.pid); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// SET LOCAL: the connection goes back to db's pool afterwards, and a
	// later commit on it must not wait for the standby too.
	if _, err := tx.ExecContext(ctx, "SET LOCAL synchronous_commit = on"); err != nil {
		t.Fatal(err)
	}
	for i, q := range stmts {
		var a []any
		if i < len(args) {
			a = args[i]
		}
		if _, err := tx.ExecContext(ctx, q, a...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	go func() {
		err := tx.Commit()
		conn.Close()
		tc.done <- err
	}()
	WaitFor(t, 30*time.Second, 5*time.Millisecond, "the commit waiting for its standby", func() bool {
		var n int
		err := db.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'SyncRep'", tc.pid).Scan(&n)
		return err == nil && n == 1
	})
	t.Cleanup(func() { tc.Release(t) })
	return tc
}

// Release cancels the wait (the transaction stays committed) and returns
// once the commit has returned: its rows are then visible.
func (tc *TrappedCommit) Release(t testing.TB) {
	t.Helper()
	if tc.done == nil {
		return
	}
	if _, err := tc.db.Exec("SELECT pg_cancel_backend($1)", tc.pid); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tc.done: // a warning, not an error: the commit stands
	case <-time.After(30 * time.Second):
		t.Fatal("the trapped commit did not return after its wait was cancelled")
	}
	tc.done = nil
}
