// Package mysql is Herald's store for MySQL 8.0+ and MariaDB 10.6+, the
// versions with SELECT … FOR UPDATE SKIP LOCKED.
//
// Every time is a DATETIME(6) in UTC taken from the database clock
// (UTC_TIMESTAMP(6)) in the statement that uses it. Claims run in short
// READ COMMITTED transactions (REPEATABLE READ would take gap locks that
// block producers' inserts; see docs/isolation.md) and never stay open across
// a publish. Deadlocks and lock wait timeouts are retried.
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// Options tunes the pool that Open creates.
type Options struct {
	// MaxOpenConns caps the pool. Defaults to 20.
	MaxOpenConns int
}

// Store is a store.Store on MySQL or MariaDB. It is safe for concurrent use.
type Store struct {
	db    *sql.DB
	owned bool
}

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
	if opts.MaxOpenConns <= 0 {
		opts.MaxOpenConns = 20
	}
	db.SetMaxOpenConns(opts.MaxOpenConns)
	db.SetMaxIdleConns(opts.MaxOpenConns)
	if err := CheckVersion(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: db, owned: true}, nil
}

// New returns a Store on a pool the caller opened and keeps (Close leaves it
// open). The DSN must have parseTime=true and loc=UTC; interpolateParams=true
// is recommended for speed. The server version is checked by Migrate.
func New(db *sql.DB) *Store { return &Store{db: db} }

// Dialect returns herald.MySQL.
func (s *Store) Dialect() herald.Dialect { return herald.MySQL }

// DB returns the pool, for callers that enqueue in their own transactions.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the pool if Open created it.
func (s *Store) Close() error {
	if s.owned {
		return s.db.Close()
	}
	return nil
}

// ErrUnsupportedVersion is returned for servers without SKIP LOCKED.
var ErrUnsupportedVersion = errors.New("mysql store: unsupported server version")

// CheckVersion refuses servers without SELECT … FOR UPDATE SKIP LOCKED:
// MySQL before 8.0 and MariaDB before 10.6.
func CheckVersion(ctx context.Context, db *sql.DB) error {
	var v string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
		return fmt.Errorf("mysql store: reading the server version: %w", err)
	}
	return checkVersionString(v)
}

func checkVersionString(v string) error {
	mariadb := strings.Contains(strings.ToLower(v), "mariadb")
	// Some MariaDB servers report "5.5.5-10.x.y-MariaDB" for old clients.
	num := strings.TrimPrefix(v, "5.5.5-")
	major, minor, ok := parseMajorMinor(num)
	switch {
	case !ok:
		return fmt.Errorf("%w: cannot parse version %q", ErrUnsupportedVersion, v)
	case mariadb && (major < 10 || major == 10 && minor < 6):
		return fmt.Errorf("%w: MariaDB %s has no SKIP LOCKED; Herald needs MariaDB 10.6 or later", ErrUnsupportedVersion, v)
	case !mariadb && major < 8:
		return fmt.Errorf("%w: MySQL %s has no SKIP LOCKED; Herald needs MySQL 8.0 or later", ErrUnsupportedVersion, v)
	}
	return nil
}

func parseMajorMinor(v string) (major, minor int, ok bool) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minorDigits := strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	minor, err2 := strconv.Atoi(minorDigits)
	return major, minor, err1 == nil && err2 == nil
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
	return retryLoop(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			return err
		}
		if err := f(tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}
