// Package sqlite is Herald's store for SQLite, on the pure-Go driver
// modernc.org/sqlite (driver name "sqlite").
//
// # One writer
//
// SQLite lets one connection write at a time. Open configures every
// connection with WAL (readers never wait for the writer), a busy timeout
// (a writer waits for the lock instead of failing at once) and BEGIN
// IMMEDIATE transactions (a transaction takes the write lock up front, so it
// cannot fail half-way with SQLITE_BUSY on upgrading from reader to writer).
// On top of that the store runs its own writes one at a time in-process:
// SQLite's busy handler sleeps in steps of milliseconds, so letting several
// claimers of one process race for the lock costs far more than queueing
// them on a channel.
//
// # Durability
//
// synchronous=FULL is the default: a committed enqueue survives a power
// loss. Options.SynchronousNormal trades that for speed (WAL with NORMAL
// stays consistent but may lose the last transactions on power loss).
//
// # Time
//
// Every timestamp column is INTEGER Unix milliseconds, taken from the
// database clock (NowMillis) in the statement that uses it.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store/internal/mapsql"
	"github.com/heraldhq/herald/store/internal/projsql"
	"github.com/heraldhq/herald/store/internal/sqlmaint"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Options tunes Open. The zero value is the safe default.
type Options struct {
	// SynchronousNormal sets synchronous=NORMAL instead of FULL: faster
	// commits, but the last transactions may be lost on power loss.
	SynchronousNormal bool
	// BusyTimeout is how long a connection waits for the write lock.
	// Defaults to 10s.
	BusyTimeout time.Duration
	// MaxOpenConns bounds the pool (readers run in parallel under WAL; writers
	// queue on the lock). Defaults to 4.
	MaxOpenConns int
}

func (o Options) withDefaults() Options {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	if o.MaxOpenConns <= 0 {
		o.MaxOpenConns = 4
	}
	return o
}

// Store is a store.Store on SQLite. It is safe for concurrent use.
type Store struct {
	// projections is the projection bookkeeping (store.ProjectionStore
	// but MigrateProjections), maintenance Cleanup and TryLock: their
	// methods are the store's.
	projections
	maintenance
	db     *sql.DB
	owned  bool
	writer chan struct{} // a one-slot semaphore: the store's writes, one at a time
	stmts  stmtCache
	// hot is the claims' and marks' connection, without a busy timeout
	// (see hotWrite); nil on a caller's pool (New).
	hot         *sql.DB
	hotStmts    stmtCache
	busyTimeout time.Duration
	// mapped are the tables read through a store.Mapping (MapTable).
	mapped *mapsql.Tables
}

// The shared parts a Store embeds, by unexported names so that they are
// not fields of its API.
type (
	projections = projsql.Projections
	maintenance = sqlmaint.Maintenance
)

// Open opens (creating if needed) the SQLite database file named by dsn, a
// path or a "file:" URI, with WAL, a busy timeout, BEGIN IMMEDIATE
// transactions and synchronous=FULL unless opts says otherwise. Settings
// already present in dsn win. It pings the database before returning.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	if dsn == "" || dsn == ":memory:" || strings.Contains(dsn, "mode=memory") {
		// Each pooled connection would see its own empty database.
		return nil, fmt.Errorf("sqlite: open %q: an in-memory database is not supported; name a file", dsn)
	}
	db, err := sql.Open("sqlite", withParams(dsn, opts))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	db.SetMaxOpenConns(opts.MaxOpenConns)
	db.SetMaxIdleConns(opts.MaxOpenConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	hot, err := openHot(ctx, dsn, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	s := New(db)
	s.owned, s.hot, s.busyTimeout = true, hot, opts.BusyTimeout
	return s, nil
}

// New returns a Store on a pool the caller owns and configures; Close leaves
// it open. The pool should use WAL, a busy timeout and _txlock=immediate, as
// Open does.
func New(db *sql.DB) *Store {
	s := &Store{db: db, writer: make(chan struct{}, 1)}
	s.projections = projsql.New(s.projectionDialect())
	s.maintenance = sqlmaint.New(s.maintenanceDialect())
	s.mapped = s.newMapped(db)
	return s
}

// withParams adds Herald's connection settings to dsn, keeping any the
// caller set.
func withParams(dsn string, o Options) string {
	sync := "FULL"
	if o.SynchronousNormal {
		sync = "NORMAL"
	}
	base, query, _ := strings.Cut(dsn, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return dsn // let the driver report the malformed DSN
	}
	has := func(name string) bool {
		for _, p := range q["_pragma"] {
			if strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), name) {
				return true
			}
		}
		return false
	}
	add := func(pragma, value string) {
		if !has(pragma) {
			q.Add("_pragma", fmt.Sprintf("%s(%s)", pragma, value))
		}
	}
	if o.BusyTimeout < 0 { // no busy handler at all, whatever dsn says (openHot)
		q["_pragma"] = slices.DeleteFunc(q["_pragma"], func(p string) bool {
			return strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), "busy_timeout")
		})
	}
	add("busy_timeout", fmt.Sprint(max(o.BusyTimeout.Milliseconds(), 0)))
	add("journal_mode", "WAL")
	add("synchronous", sync)
	if q.Get("_txlock") == "" {
		q.Set("_txlock", "immediate")
	}
	return base + "?" + q.Encode()
}

// Dialect returns the package's Dialect.
func (s *Store) Dialect() herald.Dialect { return Dialect }

// DB returns the connection pool.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the store's prepared statements, and the pool if Open
// created it.
func (s *Store) Close() error {
	s.stmts.close()
	s.hotStmts.close()
	if !s.owned {
		return nil
	}
	if s.hot != nil {
		_ = s.hot.Close()
	}
	return s.db.Close()
}

// write runs fn holding the store's write slot, so the store's own writes
// queue in Go instead of in SQLite's sleeping busy handler. (writer is nil
// only in the benchmark that compares the two.)
func (s *Store) write(ctx context.Context, fn func() error) error {
	if s.writer == nil {
		return fn()
	}
	select {
	case s.writer <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writer }()
	return fn()
}

// now is the database clock in Unix milliseconds.
const now = NowMillis

// quote returns table as a quoted identifier after validating it.
func quote(table string) (string, error) {
	if err := herald.ValidateIdentifier(table); err != nil {
		return "", fmt.Errorf("sqlite: table: %w", err)
	}
	return `"` + table + `"`, nil
}

var errNoTable = errors.New("sqlite: no such outbox table (run Migrate)")

// wrap adds the operation to err and names a missing table clearly.
func wrap(op, table string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "no such table") {
		return fmt.Errorf("sqlite: %s %s: %w: %v", op, table, errNoTable, err)
	}
	return fmt.Errorf("sqlite: %s %s: %w", op, table, err)
}

// replaceTable puts the quoted table into a statement template.
func replaceTable(tmpl, qt string) string { return strings.ReplaceAll(tmpl, "{{T}}", qt) }
