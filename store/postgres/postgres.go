// Package postgres is Herald's store for PostgreSQL 13 and later, on pgx v5
// through its database/sql driver.
//
// Every time is a timestamptz from the database clock (now()) in the
// statement that uses it. Claims run in short READ COMMITTED transactions
// with FOR UPDATE SKIP LOCKED and never stay open across a publish; the
// server ends a claim or mark transaction whose client goes silent in the
// middle of it (boundSettings). Serialization failures (40001), deadlocks
// (40P01) and lock timeouts (55P03) are retried. The
// store implements store.Waker: relays LISTEN on NotifyChannel(table),
// which herald.Outbox.Enqueue (and Enqueue here, for pgx transactions)
// notifies inside the enqueuing transaction.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
	"github.com/heraldhq/herald/store/internal/mapsql"
	"github.com/heraldhq/herald/store/internal/projsql"
	"github.com/heraldhq/herald/store/internal/sqlmaint"
	"github.com/heraldhq/herald/store/internal/sqltx"
)

// Options tunes the pool that Open creates.
type Options struct {
	// MaxOpenConns caps the pool. Defaults to 20.
	MaxOpenConns int
}

// Store is a store.Store (and store.Waker) on PostgreSQL. It is safe for
// concurrent use.
type Store struct {
	// projections is the projection bookkeeping (store.ProjectionStore
	// but MigrateProjections), maintenance Cleanup and TryLock: their
	// methods are the store's.
	projections
	maintenance
	// logs is the log lanes' bookkeeping shared with MariaDB's.
	logs  loglane.Dialect
	db    *sql.DB
	owned bool
	// bound is what claim and mark transactions may sit idle or wait for a
	// lock (boundSettings), from the shortest lease claimed with.
	bound sqltx.SmallestBound
	// tcpBound says the server runs on Linux, where the bound also covers
	// results the client stopped reading (see tcpBound); Open finds out.
	tcpBound bool
	// pipelined says claims and marks go as one pgx batch (see oneTrip):
	// the pool's driver is pgx's.
	pipelined bool
	// dsn is the connection string Open was given, for the replication
	// connections of log lanes (empty for New: no log lanes).
	dsn string
	// stats keeps projection tables' planner statistics fresh.
	stats *statsFreshener
	// mapped are the tables read through a store.Mapping (MapTable).
	mapped *mapsql.Tables
}

// The shared parts a Store embeds, by unexported names so that they are
// not fields of its API.
type (
	projections = projsql.Projections
	maintenance = sqlmaint.Maintenance
)

var (
	_ store.Store = (*Store)(nil)
	_ store.Waker = (*Store)(nil)
)

// Open connects to dsn (a postgres:// URL or key=value string), checks the
// server version and returns a Store that owns its pool.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres store: bad DSN: %w", dsnError(err))
	}
	// JIT only slows down Herald's short statements (see planSettings).
	cfg.RuntimeParams["jit"] = "off"
	db := stdlib.OpenDB(*cfg)
	if err := sqltx.SetUpPool(ctx, db, opts.MaxOpenConns, CheckVersion); err != nil {
		return nil, connectError(err)
	}
	var version string
	if err := db.QueryRowContext(ctx, "SELECT version()").Scan(&version); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres store: reading the server version: %w", err)
	}
	s := New(db)
	s.owned, s.dsn, s.tcpBound = true, dsn, strings.Contains(strings.ToLower(version), "linux")
	return s, nil
}

// dsnError keeps the reason of a DSN parse error but not the DSN itself,
// which may hold a password (pgx redacts most, not every, malformed form).
func dsnError(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) && pe.Unwrap() != nil {
		return pe.Unwrap()
	}
	if errors.As(err, &pe) {
		return errors.New("cannot parse the connection string")
	}
	return err
}

// New returns a Store on a pool the caller opened with the pgx stdlib
// driver ("pgx") and keeps: Close leaves it open. Migrate checks the
// server version.
func New(db *sql.DB) *Store {
	s := &Store{db: db, pipelined: pipelines(db), stats: newStatsFreshener(db)}
	s.projections = projsql.New(s.projectionDialect())
	s.maintenance = sqlmaint.New(s.maintenanceDialect())
	s.logs = s.logDialect()
	s.mapped = s.newMapped()
	return s
}

// Dialect returns the package's Dialect.
func (s *Store) Dialect() herald.Dialect { return Dialect }

// DB returns the pool, for callers that enqueue in their own transactions.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the pool if Open created it.
func (s *Store) Close() error {
	if s.owned {
		return s.db.Close()
	}
	return nil
}

// ErrUnsupportedVersion is returned for servers older than PostgreSQL 13.
var ErrUnsupportedVersion = errors.New("postgres store: unsupported server version")

// CheckVersion refuses servers older than PostgreSQL 13 (the table's
// event_id default uses gen_random_uuid, built in from 13).
func CheckVersion(ctx context.Context, db *sql.DB) error {
	var num int
	if err := db.QueryRowContext(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num); err != nil {
		return fmt.Errorf("postgres store: reading the server version: %w", err)
	}
	if num < 130000 {
		return fmt.Errorf("%w: %d; Herald needs PostgreSQL 13 or later", ErrUnsupportedVersion, num)
	}
	return nil
}

// retryable reports a serialization failure (40001), a deadlock (40P01) or
// a lock wait cut by lock_timeout (55P03, see boundSettings): the
// transaction was rolled back and running it again is safe.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01" || pe.Code == "55P03")
}

func retryLoop(ctx context.Context, f func() error) error { return sqltx.Retry(ctx, retryable, f) }

// quote returns table as a PostgreSQL identifier after validating it.
func quote(table string) (string, error) {
	if err := herald.ValidateIdentifier(table); err != nil {
		return "", fmt.Errorf("postgres store: table: %w", err)
	}
	return `"` + table + `"`, nil
}

// inTx runs f in a READ COMMITTED transaction, retrying conflicts.
func (s *Store) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	return sqltx.InTx(ctx, s.db, retryable, f)
}

// connectError says what a failed connection means. A server that
// refuses connections while it starts, recovers or shuts down (SQLSTATE
// 57P03, cannot_connect_now) or has no connection slot free (53300) is
// unavailable: it will take connections soon, like one not yet listening.
// Refused credentials (28000, 28P01), a database that does not exist
// (3D000) and a server too old are store.ErrMisconfigured: waiting will
// not change them.
func connectError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P03", "53300":
			return herald.Unavailable(err)
		case "28000", "28P01", "3D000":
			return store.Misconfigured(err)
		}
	}
	if errors.Is(err, ErrUnsupportedVersion) {
		return store.Misconfigured(err)
	}
	return err
}
