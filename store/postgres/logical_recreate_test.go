package postgres_test

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/postgres"
)

// Rule: a lane's table dropped and made again (DROP TABLE outside Herald,
// then herald migrate) is published again when the lane opens: the rows
// committed before that, which its stream cannot read, are handed to the
// polling workers, rows committed after are streamed, and the rows the
// dropped table got after the recorded position are not streamed (their
// ids name the new table's rows now). Before, the stream went on reading
// only the dropped table, and the new table's rows waited for the stray
// check.
func TestLogicalTableMadeAgain(t *testing.T) {
	e := newLogicalEnv(t)
	first := e.open("again")
	e.insert("a1")
	read(t, first, 1)
	first.Close()
	e.insert("old1", "old2") // after the recorded position, into the table about to be dropped
	if _, err := e.db.Exec(`DROP TABLE ` + e.table); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Migrate(t.Context(), e.table); err != nil {
		t.Fatal(err)
	}
	e.insert("new1", "new2") // ids 1 and 2 again, before the table is published
	var st store.LogStream
	testenv.WaitFor(t, 10*time.Second, 50*time.Millisecond, "the lane reopened", func() bool {
		var err error
		st, err = e.s.OpenLog(t.Context(), e.params("again")) // the closed stream's WAL sender may hold the slot a moment
		return err == nil
	})
	t.Cleanup(func() { st.Close() })
	e.insert("new3")
	if got := read(t, st, 1); strings.Join(got, " ") != "new3" {
		t.Fatalf("the stream of the table made again read %v, want new3 (not the dropped table's old1 old2)", got)
	}
	for _, id := range []string{"new1", "new2"} {
		var owner string
		if err := e.db.QueryRow(`SELECT lease_owner FROM `+e.table+` WHERE event_id = $1`, id).Scan(&owner); err != nil {
			t.Fatal(err)
		}
		if owner != postgres.LogOwner("again") {
			t.Fatalf("%s, committed before the table was published again, has lease_owner %q: not handed over", id, owner)
		}
	}
}
