package sqlproj_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/projector/projectortest"
	"github.com/heraldhq/herald/projector/sqlproj"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/sqlite"
)

// TestCompile: named parameters become placeholders in order, once per
// occurrence; quotes, casts and := are left alone; an unknown name is
// refused.
func TestCompile(t *testing.T) {
	q := "UPDATE t SET a = :payload.a.b, s = ':event.id', c = x::text, d = :event.id WHERE k = :header.k AND @v := 1"
	st, err := sqlproj.Compile(q, postgres.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	want := "UPDATE t SET a = $1, s = ':event.id', c = x::text, d = $2 WHERE k = $3 AND @v := 1"
	if st.SQL != want || !reflect.DeepEqual(st.Params, []string{"payload.a.b", "event.id", "header.k"}) {
		t.Errorf("got %q %v", st.SQL, st.Params)
	}
	if st, _ := sqlproj.Compile("SELECT :event.id, :event.id", mysql.Dialect); st.SQL != "SELECT ?, ?" {
		t.Errorf("mysql: %q", st.SQL)
	}
	for _, bad := range []string{"SELECT :event.nope", "SELECT :what", "SELECT 'open", "  "} {
		if _, err := sqlproj.Compile(bad, sqlite.Dialect); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}

// TestArgs: values from the event; JSON numbers as int64 or float64,
// objects as JSON text; a missing path or header is an error naming it.
func TestArgs(t *testing.T) {
	st, err := sqlproj.Compile("SELECT :event.tenant, :event.key, :event.time_ms, :header.h, :payload.n, :payload.f, :payload.o, :payload.a.1", sqlite.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	ev := herald.Event{ID: "e", Tenant: "t1", PartitionKey: "k", CreatedAt: time.UnixMilli(1234), Headers: map[string]string{"h": "v"},
		Payload: []byte(`{"n": 7, "f": 1.5, "o": {"x": 1}, "a": ["p", "q"]}`)}
	args, err := st.Args(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"t1", "k", int64(1234), "v", int64(7), 1.5, `{"x":1}`, "q"}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("got %#v, want %#v", args, want)
	}
	for q, missing := range map[string]string{"SELECT :payload.zz": "zz", "SELECT :header.nope": "nope", "SELECT :payload.a.5": "a.5"} {
		st, _ := sqlproj.Compile(q, sqlite.Dialect)
		if _, err := st.Args(ev); err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("%s: %v, want an error naming %q", q, err, missing)
		}
	}
}

func openSQLite(t *testing.T) *sqlite.Store {
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.DB().Exec("CREATE TABLE seen (id TEXT PRIMARY KEY, who TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestValidateAndPrepare: config errors name the key path; a statement
// the database cannot prepare (a missing table) is refused at load.
func TestValidateAndPrepare(t *testing.T) {
	ok := sqlproj.Projection{Settings: sqlproj.Settings{Name: "p"}, Source: sqlproj.Source{Outbox: "herald_outbox"},
		Statements: []string{"INSERT INTO seen (id, who) VALUES (:event.id, :payload.who)"}}
	bad := map[string]func(p *sqlproj.Projection){
		"projections[0].name":               func(p *sqlproj.Projection) { p.Name = "" },
		"projections[0].source":             func(p *sqlproj.Projection) { p.Source.Broker = "b" },
		"projections[0].source.destination": func(p *sqlproj.Projection) { p.Source = sqlproj.Source{Broker: "b"} },
		"projections[0].statements":         func(p *sqlproj.Projection) { p.Statements = nil },
		"projections[0].statements[0]":      func(p *sqlproj.Projection) { p.Statements = []string{"SELECT :x"} },
		"projections[0].include_types[0]":   func(p *sqlproj.Projection) { p.IncludeTypes = []string{""} },
	}
	for key, mutate := range bad {
		p := ok
		mutate(&p)
		if err := p.Validate("projections[0]"); err == nil || !strings.HasPrefix(err.Error(), key+":") {
			t.Errorf("%s: got %v", key, err)
		}
	}
	if err := ok.Validate("projections[0]"); err != nil {
		t.Fatal(err)
	}
	s := openSQLite(t)
	p := ok
	p.Statements = append(p.Statements, "UPDATE missing SET x = :event.id")
	_, err := sqlproj.Prepare(context.Background(), p, s, "projections[0]")
	if !errors.Is(err, sqlproj.ErrPrepare) || !strings.HasPrefix(err.Error(), "projections[0].statements[1]:") {
		t.Fatalf("got %v, want ErrPrepare at projections[0].statements[1]", err)
	}
}

// TestMissingPathGoesDead: an event whose payload lacks a named path
// fails, is retried, and goes dead with the path in its reason; the good
// events are applied.
func TestMissingPathGoesDead(t *testing.T) {
	s := openSQLite(t)
	if err := s.MigrateProjections(context.Background(), store.DefaultProjectionTable); err != nil {
		t.Fatal(err)
	}
	p := sqlproj.Projection{Source: sqlproj.Source{Outbox: "herald_outbox"},
		Settings:   sqlproj.Settings{Name: "p", MaxAttempts: 2, Backoff: sqlproj.Retry{Initial: time.Millisecond, Max: 5 * time.Millisecond}},
		Statements: []string{"INSERT INTO seen (id, who) VALUES (:event.id, :payload.who)"}}
	c, err := sqlproj.Prepare(context.Background(), p, s, "projections[0]")
	if err != nil {
		t.Fatal(err)
	}
	proj, err := c.Projector(nil)
	if err != nil {
		t.Fatal(err)
	}
	src := projectortest.NewSliceSource(
		herald.Event{ID: "good", Type: "T", Payload: []byte(`{"who": "a"}`)},
		herald.Event{ID: "bad", Type: "T", Payload: []byte(`{"whom": "b"}`)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = proj.Run(ctx, src) }()
	src.WaitAcks(t, 2)
	cancel()
	<-done
	var who string
	if err := s.DB().QueryRow("SELECT who FROM seen WHERE id = 'good'").Scan(&who); err != nil || who != "a" {
		t.Errorf("[good applied] %q, %v", who, err)
	}
	var state, reason string
	err = s.DB().QueryRow("SELECT state, last_error FROM "+store.DefaultProjectionTable+" WHERE event_id = 'bad'").Scan(&state, &reason)
	if err != nil || state != "dead" || !strings.Contains(reason, ":payload.who") {
		t.Errorf("[dead with the reason] state %q reason %q, %v", state, reason, err)
	}
}
