package relay

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver

	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/internal/testenv"
	. "github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store/postgres"
)

// Rule: on PostgreSQL an idle relay is woken by the NOTIFY of a commit made
// by another program (a plain INSERT, no Herald code), not by polling: with
// poll_interval an hour and the store's peeks hidden, once its worker's
// claim found nothing, the event still arrives.
func TestPostgresNotifyWakesIdleRelay(t *testing.T) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, testenv.PostgresDSN(), postgres.Options{})
	if err != nil {
		testenv.Unreachable(t, "PostgreSQL", err)
	}
	defer s.Close()
	table := testenv.Name("notify")
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatal(err)
	}
	defer s.Drop(ctx, table)
	w := newWatchedPostgres(s)
	e := &env{t: t, store: w, table: table}
	e.pub = memory.New(memory.Config{})
	e.start(e.lane(func(l *Lane) { l.PollInterval = time.Hour }))
	// A notified worker claims once at start, then waits for a NOTIFY or
	// its poll interval: from here only a NOTIFY makes it claim again.
	waitFor(t, 30*time.Second, "the worker's first claim finding nothing", func() bool { return w.idleWorkers() == 1 })

	other, err := sql.Open("pgx", testenv.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO "` + table + `" (event_id, topic, event_type, payload) VALUES ('plain-1', 't', 'T', '{}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`SELECT pg_notify($1, '')`, postgres.NotifyChannel(table)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Without the NOTIFY the worker would look again in an hour.
	waitFor(t, 10*time.Second, "the NOTIFY to wake the relay", func() bool { return e.pub.Count("plain-1") == 1 })
}
