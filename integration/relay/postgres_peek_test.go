package relay

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/internal/testenv"
	. "github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store/postgres"
)

// Rule: on PostgreSQL a row that another program commits with a bare
// INSERT (no NOTIFY, as most producers in other languages write it) is
// relayed without waiting for poll_interval: the relay peeks. With
// poll_interval an hour, each of two such events arrives within seconds,
// the second after the lane went idle.
func TestPostgresBareInsertIsRelayed(t *testing.T) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, testenv.PostgresDSN(), postgres.Options{})
	if err != nil {
		testenv.Unreachable(t, "PostgreSQL", err)
	}
	defer s.Close()
	table := testenv.Name("bare")
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatal(err)
	}
	defer s.Drop(ctx, table)
	e := &env{t: t, store: s, table: table, pub: memory.New(memory.Config{})}
	e.start(e.lane(func(l *Lane) { l.PollInterval = time.Hour }))
	other, err := sql.Open("pgx", testenv.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	insert := func(id string) {
		if _, err := other.Exec(`INSERT INTO "`+table+`" (event_id, topic, event_type, payload) VALUES ($1, 't', 'T', '{}')`, id); err != nil {
			t.Fatal(err)
		}
	}
	insert("bare-1")
	waitFor(t, 10*time.Second, "the first bare INSERT relayed", func() bool { return e.pub.Count("bare-1") == 1 })
	time.Sleep(time.Second) // the lane goes idle; a second is far from the hour of poll_interval
	insert("bare-2")
	waitFor(t, 10*time.Second, "a bare INSERT relayed by an idle lane", func() bool { return e.pub.Count("bare-2") == 1 })
}
