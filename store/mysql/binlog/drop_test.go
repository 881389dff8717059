package binlog_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// Rule: Drop forgets the table's log lanes: a lane of the same name over
// the table made again starts as new (its rows so far handed over, later
// ones streamed) instead of resuming at the dropped table's position and
// publishing the rows the binary log holds of it. Before, Drop kept the
// position, and the bench's log lanes republished the rows of every run
// in between (a polling run's, already delivered).
func TestBinlogDropForgetsTheLane(t *testing.T) {
	e := newBinlogEnv(t)
	first := e.open("dropped")
	e.insert("a1")
	read(t, first, 1)
	first.Close()
	e.insert("old1") // after the recorded position, in the table about to be dropped
	ctx := context.Background()
	if err := e.s.Drop(ctx, e.table); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Migrate(ctx, e.table); err != nil {
		t.Fatal(err)
	}
	var st store.LogStream
	testenv.WaitFor(t, 10*time.Second, 50*time.Millisecond, "the lane opened again", func() bool {
		var err error
		st, err = e.s.OpenLog(ctx, e.params("dropped")) // the closed dump may hold the lease a moment
		return err == nil
	})
	t.Cleanup(func() { st.Close() })
	e.insert("new1")
	if got := read(t, st, 1); strings.Join(got, " ") != "new1" {
		t.Fatalf("the lane over the table made again read %v, want new1 (not the dropped table's old1)", got)
	}
}
