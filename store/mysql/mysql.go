// Package mysql is Herald's store for MySQL 8.0.13+ and MariaDB 10.6+: the
// versions with SELECT … FOR UPDATE SKIP LOCKED and expression defaults.
//
// Every time is a DATETIME(6) in UTC taken from the database clock
// (UTC_TIMESTAMP(6)) in the statement that uses it. Claims run in short
// READ COMMITTED transactions (REPEATABLE READ would take gap locks that
// block producers' inserts; see docs/isolation.md) and never stay open across
// a publish; the server ends one whose client goes silent in the middle of
// it (boundSQL), so a frozen relay's locks last less than its lease.
// Deadlocks and lock wait timeouts are retried.
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/mapsql"
	"github.com/heraldhq/herald/store/internal/projsql"
	"github.com/heraldhq/herald/store/internal/sqlmaint"
	"github.com/heraldhq/herald/store/internal/sqltx"
)

// Options tunes the pool that Open creates.
type Options struct {
	// MaxOpenConns caps each of the store's two pools: the one DB returns
	// (marks, peeks, admin, enqueues) and the claims' own (see batchTx), so
	// a store may hold up to twice this many connections. Defaults to 20.
	MaxOpenConns int
}

// Store is a store.Store on MySQL or MariaDB. It is safe for concurrent use.
type Store struct {
	// projections is the projection bookkeeping (store.ProjectionStore
	// but MigrateProjections), maintenance Cleanup and TryLock: their
	// methods are the store's.
	projections
	maintenance
	db *sql.DB
	// multi is the claims' pool, with multiStatements on (see batchTx);
	// nil on a caller's pool (New), where claims use plain transactions.
	multi *sql.DB
	owned bool
	// mariadb says which server Open found, for boundSQL.
	mariadb bool
	// bound is how long a claim transaction may sit idle (boundSQL), from
	// the shortest lease claimed with; sessions tracks the claims' pool
	// connections that have it.
	bound    sqltx.SmallestBound
	sessions sessionBounds
	// commits tracks claims committing in the background (AsyncCommit).
	commits sync.WaitGroup

	mu          sync.Mutex
	nextExpired map[string]time.Time   // by scope: when to look for expired leases next
	cursors     map[string]claimCursor // by scope: where the next claim may start (cursor.go)
	peeks       map[string]*sql.Stmt   // prepared peeks by query (one per lane scope)
	mapped      *mapsql.Tables         // tables read through a store.Mapping (MapTable)
}

// The shared parts a Store embeds, by unexported names so that they are
// not fields of its API.
type (
	projections = projsql.Projections
	maintenance = sqlmaint.Maintenance
)

var _ store.Store = (*Store)(nil)

// Open connects to dsn (go-sql-driver/mysql format), checks the server
// version and returns a Store that owns its pool. It forces the settings the
// store relies on: parseTime=true and loc=UTC (DATETIME values are UTC),
// time_zone='+00:00' for the session, and interpolateParams=true (one round
// trip per statement instead of prepare, execute, close).
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		// The parser's messages do not repeat the DSN, so no password leaks.
		return nil, fmt.Errorf("mysql store: bad DSN: %w", err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql store: %w", err)
	}
	db := sql.OpenDB(connector)
	var version string
	if err := sqltx.SetUpPool(ctx, db, opts.MaxOpenConns, func(ctx context.Context, db *sql.DB) (err error) {
		if version, err = serverVersion(ctx, db); err != nil {
			return err
		}
		return checkVersionString(version)
	}); err != nil {
		return nil, connectError(err)
	}
	multi, err := openMulti(ctx, cfg, opts)
	if err != nil {
		db.Close()
		return nil, connectError(err)
	}
	s := New(db)
	s.multi, s.owned, s.mariadb = multi, true, isMariaDB(version)
	return s, nil
}

// openMulti opens the pool claims run on: the same settings with
// multiStatements on, kept apart from the pool DB returns so that callers'
// statements never run with multiStatements.
func openMulti(ctx context.Context, cfg *mysql.Config, opts Options) (*sql.DB, error) {
	cfg = cfg.Clone()
	cfg.MultiStatements = true
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql store: %w", err)
	}
	multi := sql.OpenDB(connector)
	if err := sqltx.SetUpPool(ctx, multi, opts.MaxOpenConns, func(ctx context.Context, db *sql.DB) error {
		return db.PingContext(ctx)
	}); err != nil {
		return nil, err
	}
	return multi, nil
}

// New returns a Store on a pool the caller opened and keeps (Close leaves it
// open). The DSN must have parseTime=true and loc=UTC; interpolateParams=true
// is recommended for speed. The server version is checked by Migrate.
func New(db *sql.DB) *Store {
	s := &Store{db: db}
	s.projections = projsql.New(s.projectionDialect())
	s.maintenance = sqlmaint.New(s.maintenanceDialect())
	return s
}

// Dialect returns the package's Dialect.
func (s *Store) Dialect() herald.Dialect { return Dialect }

// DB returns the pool, for callers that enqueue in their own transactions.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the pool if Open created it.
func (s *Store) Close() error {
	s.commits.Wait()
	s.mu.Lock()
	for _, st := range s.peeks {
		_ = st.Close()
	}
	s.mu.Unlock()
	if s.owned {
		return errors.Join(s.multi.Close(), s.db.Close())
	}
	return nil
}

// ErrUnsupportedVersion is returned for servers Herald cannot run on.
var ErrUnsupportedVersion = errors.New("mysql store: unsupported server version")

// CheckVersion refuses servers Herald cannot run on: MySQL before 8.0.13
// (SKIP LOCKED came in 8.0.1, expression defaults such as DEFAULT
// (UTC_TIMESTAMP(6)) in 8.0.13) and MariaDB before 10.6 (SKIP LOCKED).
func CheckVersion(ctx context.Context, db *sql.DB) error {
	v, err := serverVersion(ctx, db)
	if err != nil {
		return err
	}
	return checkVersionString(v)
}

func serverVersion(ctx context.Context, db *sql.DB) (string, error) {
	var v string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
		return "", fmt.Errorf("mysql store: reading the server version: %w", err)
	}
	return v, nil
}

// The server's errors for refused credentials or database, a database
// that does not exist, and no connection slot free.
const (
	erDBAccessDenied     = 1044
	erAccessDenied       = 1045
	erBadDB              = 1049
	erAccessDeniedNoPass = 1698
	erConCount           = 1040
	erTooManyUserConns   = 1203
)

// connectError says what a failed connection means: refused credentials,
// a database that does not exist and a server too old are
// store.ErrMisconfigured (waiting will not change them); a server with no
// connection slot free is unavailable, like one not yet listening.
func connectError(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case erDBAccessDenied, erAccessDenied, erBadDB, erAccessDeniedNoPass:
			return store.Misconfigured(err)
		case erConCount, erTooManyUserConns:
			return herald.Unavailable(err)
		}
	}
	if errors.Is(err, ErrUnsupportedVersion) {
		return store.Misconfigured(err)
	}
	return err
}

func isMariaDB(version string) bool { return strings.Contains(strings.ToLower(version), "mariadb") }

func checkVersionString(v string) error {
	mariadb := isMariaDB(v)
	// Some MariaDB servers report "5.5.5-10.x.y-MariaDB" for old clients.
	parts, ok := parseVersion(strings.TrimPrefix(v, "5.5.5-"))
	switch {
	case !ok:
		return fmt.Errorf("%w: cannot parse version %q", ErrUnsupportedVersion, v)
	case mariadb && less(parts, [3]int{10, 6, 0}):
		return fmt.Errorf("%w: MariaDB %s has no SKIP LOCKED; Herald needs MariaDB 10.6 or later", ErrUnsupportedVersion, v)
	case !mariadb && less(parts, [3]int{8, 0, 13}):
		return fmt.Errorf("%w: MySQL %s lacks SKIP LOCKED or expression defaults; Herald needs MySQL 8.0.13 or later",
			ErrUnsupportedVersion, v)
	}
	return nil
}

// parseVersion reads "major.minor.patch…"; a missing or odd patch is 0.
func parseVersion(v string) ([3]int, bool) {
	var out [3]int
	fields := strings.SplitN(v, ".", 3)
	if len(fields) < 2 {
		return out, false
	}
	for i, f := range fields {
		digits := f[:len(f)-len(strings.TrimLeft(f, "0123456789"))]
		n, err := strconv.Atoi(digits)
		if err != nil {
			return out, i == 2
		}
		out[i] = n
	}
	return out, true
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// retryable reports a lost deadlock (1213) or a lock wait timeout (1205):
// the transaction was rolled back and running it again is safe.
func retryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}

// quote returns table as a MySQL identifier after validating it.
func quote(table string) (string, error) {
	if err := herald.ValidateIdentifier(table); err != nil {
		return "", fmt.Errorf("mysql store: table: %w", err)
	}
	return "`" + table + "`", nil
}

// inTx runs f in a READ COMMITTED transaction, retrying deadlocks.
func (s *Store) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	return sqltx.InTx(ctx, s.db, retryable, f)
}
