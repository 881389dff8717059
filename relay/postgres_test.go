package relay

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver

	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store/postgres"
)

// Rule: on PostgreSQL an idle relay is woken by the NOTIFY of a commit made
// by another program (a plain INSERT, no Herald code), not by polling: with
// poll_interval an hour, the event still arrives within a second.
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
	e := &env{t: t, store: s, table: table}
	e.pub = memory.New(memory.Config{})
	e.start(e.lane(func(l *Lane) { l.PollInterval = time.Hour }))
	time.Sleep(100 * time.Millisecond) // let the first pass find nothing and go idle

	other, err := sql.Open("pgx", testenv.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, _ := other.Begin()
	if _, err := tx.Exec(`INSERT INTO "` + table + `" (event_id, topic, event_type, payload) VALUES ('plain-1', 't', 'T', '{}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`SELECT pg_notify($1, '')`, postgres.NotifyChannel(table)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the NOTIFY to wake the relay", func() bool { return e.pub.Count("plain-1") == 1 })
	if took := time.Since(start); took > time.Second {
		t.Fatalf("delivered %s after commit; the NOTIFY did not wake the relay", took)
	}
}
