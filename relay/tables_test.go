package relay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
)

// Rule: a lane whose table is dropped under the running relay is not a
// database outage: the relay reports that lane not ready naming its table
// and `herald migrate`, the database stays up, the store's other lane
// keeps delivering, and once the table is migrated again the lane
// delivers without a restart.
func TestDroppedTableIsTheLanesNotAnOutage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.store.Migrate(ctx, "other_outbox"); err != nil {
		t.Fatal(err)
	}
	ob, err := herald.NewOutbox(herald.OutboxConfig{Table: "other_outbox", Dialect: e.store.Dialect()})
	if err != nil {
		t.Fatal(err)
	}
	other := &env{t: t, store: e.store, ob: ob, pub: e.pub, table: "other_outbox"}
	h := NewHealth()
	e.startWith(Config{Health: h, Lanes: []Lane{e.lane(), e.lane(func(l *Lane) { l.Name, l.Table = "other", "other_outbox" })}})
	e.enqueue(events("before", "k", 3)...)
	waitFor(t, 10*time.Second, "delivered before the drop", func() bool { return e.stats().Delivered == 3 })

	if _, err := e.store.DB().ExecContext(ctx, "DROP TABLE "+e.table); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the lane not ready, naming its table and herald migrate", func() bool {
		why := strings.Join(h.Unready(), "\n")
		return strings.Contains(why, "lane test: table outbox does not exist") && strings.Contains(why, "herald migrate")
	})
	other.enqueue(events("other", "k", 3)...)
	waitFor(t, 10*time.Second, "the other lane delivering", func() bool { return other.stats().Delivered == 3 })
	if s := h.Store(); !s.Up {
		t.Errorf("a dropped table reported as a database outage: %+v", s)
	}
	for _, line := range h.Unready() {
		if !strings.HasPrefix(line, "lane test: ") {
			t.Errorf("unready for more than the lane's table: %q", line)
		}
	}

	if err := e.store.Migrate(ctx, e.table); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "ready once migrated again", func() bool { return len(h.Unready()) == 0 })
	e.enqueue(events("after", "k", 3)...)
	waitFor(t, 10*time.Second, "the lane delivering again", func() bool { return e.stats().Delivered == 3 })
}
