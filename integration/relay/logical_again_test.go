package relay

import (
	"context"
	"testing"
	"time"

	. "github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/postgres"
)

// Rule: a log lane's table dropped and made again while the relay runs
// (DROP TABLE outside Herald, then herald migrate) loses nothing, and the
// lane goes back to streaming: the stray check hands the new table's first
// rows over and reopens the stream, whose open publishes the table again.
// Before, the stream kept reading a log that no longer carried the table,
// and every later row waited for the stray check.
func TestLogicalTableMadeAgainWhileRunning(t *testing.T) {
	e, _ := newLogicalEnv(t)
	e.startLog(func(l *Lane) { l.Ordering = OrderingKey })
	e.enqueue(events("a", "ka", 3)...)
	waitFor(t, 30*time.Second, "the first events", func() bool { return e.pub.Distinct() == 3 })
	db := e.store.DB()
	if _, err := db.Exec(`DROP TABLE ` + e.table); err != nil {
		t.Fatal(err)
	}
	if err := store.MigrateFor(context.Background(), e.store, e.table, store.TableUse{Ordered: true}); err != nil {
		t.Fatal(err)
	}
	e.enqueue(events("b", "kb", 3)...)
	waitFor(t, 30*time.Second, "the new table's first events", func() bool { return e.pub.Distinct() == 6 })
	waitFor(t, 30*time.Second, "the table published again and the lane streaming", func() bool {
		var member, active bool
		err := db.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_publication_tables WHERE tablename = $1),
  EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $2 AND active)`, e.table, postgres.SlotName("test")).Scan(&member, &active)
		return err == nil && member && active
	})
	e.enqueue(events("c", "kc", 3)...)
	waitFor(t, 30*time.Second, "the events after the reopen", func() bool { return e.pub.Distinct() == 9 })
	waitFor(t, 30*time.Second, "every row of the new table marked delivered", func() bool { return e.stats().Delivered == 6 })
	var handed int
	if err := db.QueryRow(`SELECT COUNT(*) FROM ` + e.table + ` WHERE event_id LIKE 'c-%' AND lease_owner <> ''`).Scan(&handed); err != nil {
		t.Fatal(err)
	}
	if handed != 0 {
		t.Fatalf("%d of the events committed after the reopen were handed to the polling workers, want 0: streamed", handed)
	}
}
