// Package projectortest helps test projections and their sources: stores on
// the test databases, a counting read model, and the suites every
// broker.Subscriber passes: RunSource (a projection of many events whose
// totals must equal the events sent) and RunForwarded (rows that copied an
// incoming CloudEvent's id and type, written by plain SQL and relayed, are
// each applied once under their own id) and RunRawColliding (messages from
// another producer that name the id twice, in two cases, are read by the
// exact spelling).
package projectortest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/sqlite"
)

// Store is a store: every store keeps both an outbox and projections.
type Store = store.Store

// Opener opens a store on one test database; every call within a test
// returns a new pool on the same database (as another process would).
type Opener func(tb testing.TB) Store

// Backend is one database to run a test on.
type Backend struct {
	Name string
	// Open returns an Opener for a fresh database (SQLite) or the shared
	// test server; it skips (or, with CI=true, fails) when unreachable.
	Open func(tb testing.TB) Opener
	// OpenOutside opens a store outside a test (a crash test's child
	// process), on the SQLite file at path or the shared test server.
	OpenOutside func(ctx context.Context, path string) (Store, error)
}

// Backends returns SQLite, MySQL/MariaDB and PostgreSQL.
func Backends() []Backend {
	return []Backend{
		{"sqlite", func(tb testing.TB) Opener { return SQLite(filepath.Join(tb.TempDir(), "p.db")) },
			func(ctx context.Context, path string) (Store, error) {
				return sqlite.Open(ctx, path, sqlite.Options{SynchronousNormal: true})
			}},
		{"mysql", func(tb testing.TB) Opener { return probe(tb, MySQL()) },
			func(ctx context.Context, _ string) (Store, error) {
				return mysql.Open(ctx, testenv.MySQLDSN(), mysql.Options{})
			}},
		{"postgres", func(tb testing.TB) Opener { return probe(tb, Postgres()) },
			func(ctx context.Context, _ string) (Store, error) {
				return postgres.Open(ctx, testenv.PostgresDSN(), postgres.Options{})
			}},
	}
}

// probe opens one store to skip early when the server is down.
func probe(tb testing.TB, open Opener) Opener {
	open(tb)
	return open
}

// SQLite opens stores on the database file at path, with synchronous=NORMAL
// to keep tests fast (durability is not what they check).
func SQLite(path string) Opener {
	return func(tb testing.TB) Store {
		s, err := sqlite.Open(context.Background(), path, sqlite.Options{SynchronousNormal: true})
		if err != nil {
			tb.Fatalf("sqlite: %v", err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		return s
	}
}

// MySQL opens stores on the test MySQL/MariaDB server.
func MySQL() Opener {
	return func(tb testing.TB) Store {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := mysql.Open(ctx, testenv.MySQLDSN(), mysql.Options{})
		if err != nil {
			Unreachable(tb, "MySQL/MariaDB", err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		return s
	}
}

// Postgres opens stores on the test PostgreSQL server.
func Postgres() Opener {
	return func(tb testing.TB) Store {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := postgres.Open(ctx, testenv.PostgresDSN(), postgres.Options{})
		if err != nil {
			Unreachable(tb, "PostgreSQL", err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		return s
	}
}

// Unreachable skips tb because a server is down, or fails it when CI=true;
// it is testenv.Unreachable, for tests outside this module's internal tree.
func Unreachable(tb testing.TB, server string, err error) {
	tb.Helper()
	testenv.Unreachable(tb, server, err)
}

// Name returns a fresh identifier with prefix, unique across runs.
func Name(prefix string) string { return testenv.Name(prefix) }

// OpenBackend opens a store outside a test (a crash test's child process)
// on the backend named so (Backends), the SQLite one on the file at path.
func OpenBackend(ctx context.Context, backend, path string) (Store, error) {
	for _, b := range Backends() {
		if b.Name == backend {
			return b.OpenOutside(ctx, path)
		}
	}
	return nil, fmt.Errorf("unknown backend %q", backend)
}

// ModelOn returns the model whose table already exists in s's database.
func ModelOn(s Store, table string) *Model { return &Model{Table: table, dialect: s.Dialect()} }

// Model is a counting read model: one row per event applied, with its key
// and its sequence number within the key. Counts are rows, so an event
// applied twice counts twice; plain INSERTs, so the model is the same SQL
// on every database.
type Model struct {
	Table   string
	dialect herald.Dialect
}

// NewModel creates a fresh model table in s's database, dropped at the end.
func NewModel(tb testing.TB, s Store) *Model {
	tb.Helper()
	m := &Model{Table: Name("herald_model"), dialect: s.Dialect()}
	if _, err := s.DB().Exec("CREATE TABLE " + m.Table + " (k VARCHAR(64) NOT NULL, seq BIGINT NOT NULL)"); err != nil {
		tb.Fatalf("model: %v", err)
	}
	if _, err := s.DB().Exec("CREATE INDEX " + m.Table + "_k ON " + m.Table + " (k)"); err != nil {
		tb.Fatalf("model: %v", err)
	}
	tb.Cleanup(func() { _, _ = s.DB().Exec("DROP TABLE " + m.Table) })
	return m
}

// Payload is the body of a test event: the counter it bumps and its
// sequence number within its key.
type Payload struct {
	Key string `json:"key"`
	Seq int64  `json:"seq"`
}

// Event returns a test event for key with sequence seq, partitioned by key.
func Event(key string, seq int64) herald.Event {
	body, _ := json.Marshal(Payload{Key: key, Seq: seq})
	return herald.Event{ID: herald.NewID(), Topic: "count", Type: "Counted", PartitionKey: key, Payload: body}
}

// Bump counts one for key in tx, with its seq. A payload that is
// not a Payload is a permanent error.
func (m *Model) Bump(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
	var p Payload
	if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Key == "" {
		return herald.Permanent(fmt.Errorf("bad payload %q: %v", ev.Payload, err))
	}
	q := m.dialect.Rebind("INSERT INTO " + m.Table + " (k, seq) VALUES (?, ?)")
	_, err := tx.ExecContext(ctx, q, p.Key, p.Seq)
	return err
}

// Reset empties the model, for rebuilds.
func (m *Model) Reset(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM "+m.Table)
	return err
}

// Total returns the sum of all counters.
func (m *Model) Total(tb testing.TB, db *sql.DB) int64 {
	tb.Helper()
	var n sql.NullInt64
	if err := db.QueryRow("SELECT COUNT(*) FROM " + m.Table).Scan(&n); err != nil {
		tb.Fatalf("model total: %v", err)
	}
	return n.Int64
}

// Count returns key's counter.
func (m *Model) Count(tb testing.TB, db *sql.DB, key string) int64 {
	tb.Helper()
	q := m.dialect.Rebind("SELECT COUNT(*) FROM " + m.Table + " WHERE k = ?")
	var n int64
	if err := db.QueryRow(q, key).Scan(&n); err != nil && !errors.Is(err, sql.ErrNoRows) {
		tb.Fatalf("model count: %v", err)
	}
	return n
}

// Eventually polls cond every 10ms until it holds, failing tb after within.
func Eventually(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: still not true after %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ChildProjector is a crash child's projector: projection "count" on the
// counting model table model, ledger table, in the backend's database (the
// SQLite file path). A child cannot fail a test, so a setup error exits
// the process with status 98.
func ChildProjector(backend, path, table, model string) *projector.Projector {
	p, _ := childProjector(backend, path, table, model)
	return p
}

// childProjector is ChildProjector, also returning its store.
func childProjector(backend, path, table, model string) (*projector.Projector, Store) {
	s, err := OpenBackend(context.Background(), backend, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(98)
	}
	p, err := projector.New(projector.Config{Settings: projector.Settings{Name: "count", Table: table}, Store: s, Handler: ModelOn(s, model).Bump,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(98)
	}
	return p, s
}
