package mysql

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlmigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// locksTable is the key of Herald's own tables in herald_migrations.
const locksTable = "herald_locks"

// migrateLock is the GET_LOCK name that serializes migrations across
// processes (MySQL DDL commits implicitly, so a transaction cannot).
const migrateLock = "herald_migrate"

// Migrate creates or upgrades table and Herald's own tables to the latest
// version, for plain lanes: version 5 drops the indexes of ordered and
// tenant claims (MigrateFor keeps or adds them). Concurrent callers
// (several relays starting at once) wait for each other on a named lock;
// each version is applied once, recorded in herald_migrations keyed by
// (table_name, version).
func (s *Store) Migrate(ctx context.Context, table string) error {
	return s.MigrateFor(ctx, table, store.TableUse{})
}

// underMigrateLock runs steps on one connection that holds the migration
// lock, once herald_migrations exists.
func (s *Store) underMigrateLock(ctx context.Context, steps func(conn *sql.Conn) error) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("mysql store: migrate: %w", err)
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 60)", migrateLock).Scan(&got); err != nil || got.Int64 != 1 {
		return fmt.Errorf("mysql store: migrate: could not take lock %s within 60s: %v", migrateLock, err)
	}
	// A fresh context: the lock must be released even if ctx was cancelled.
	defer conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(?)", migrateLock) //nolint:errcheck // the lock also ends with the session
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS herald_migrations (
  table_name VARCHAR(64) NOT NULL,
  version INT NOT NULL,
  applied_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
  PRIMARY KEY (table_name, version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`); err != nil {
		return fmt.Errorf("mysql store: migrate: %w", err)
	}
	return steps(conn)
}

// forgetDropped deletes the migration records of table when the table
// itself is gone (dropped by hand), so that migrating makes it again
// instead of finding it up to date.
func forgetDropped(ctx context.Context, conn *sql.Conn, table string) error {
	if _, err := conn.ExecContext(ctx, `DELETE FROM herald_migrations WHERE table_name = ? AND NOT EXISTS
  (SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?)`, table, table); err != nil {
		return fmt.Errorf("mysql store: migrate %s: %w", table, err)
	}
	return nil
}

// apply runs the migrations of kind for table that herald_migrations does
// not list yet. Each statement is idempotent (IF NOT EXISTS, or see
// appliedBefore), so a crash between a DDL and its record only repeats
// harmless work.
func apply(ctx context.Context, conn *sql.Conn, kind, table string) error {
	return applyUpTo(ctx, conn, kind, table, math.MaxInt, store.TableUse{})
}

// applyUpTo is apply that stops after version upTo (tests build older
// tables with it, to upgrade them) and leaves the indexes lanes of use
// read where a migration drops them (version 5; MigrateFor).
func applyUpTo(ctx context.Context, conn *sql.Conn, kind, table string, upTo int, use store.TableUse) error {
	ms, err := sqlmigrate.LoadMigrations(migrationFiles, kind)
	if err != nil {
		return fmt.Errorf("mysql store: %w", err)
	}
	var current int
	if err := conn.QueryRowContext(ctx,
		"SELECT COALESCE(MAX(version), 0) FROM herald_migrations WHERE table_name = ?", table).Scan(&current); err != nil {
		return fmt.Errorf("mysql store: migrate %s: %w", table, err)
	}
	for _, m := range ms {
		if m.Version <= current || m.Version > upTo {
			continue
		}
		for _, stmt := range m.Statements(table) {
			// Version 6 drops them all to add a column instantly;
			// MigrateFor's addIndexes builds the used ones again.
			if m.Version == laneIndexesVersion && keeps(stmt, use) {
				continue
			}
			if _, err := conn.ExecContext(ctx, stmt); err != nil && !appliedBefore(stmt, err) {
				return fmt.Errorf("mysql store: migrate %s to version %d: %w", table, m.Version, err)
			}
		}
		if _, err := conn.ExecContext(ctx,
			"INSERT INTO herald_migrations (table_name, version) VALUES (?, ?)", table, m.Version); err != nil {
			return fmt.Errorf("mysql store: migrate %s: recording version %d: %w", table, m.Version, err)
		}
	}
	return nil
}

// laneIndexesVersion is the version that drops the indexes of ordered and
// tenant claims for tables whose lanes do not read them (keeps).
const laneIndexesVersion = 5

// The server's errors for ADD COLUMN of a column that exists, for a
// column that does not exist and for DROP INDEX of an index that does not.
const (
	erDupFieldName       = 1060
	erBadFieldName       = 1054
	erCantDropFieldOrKey = 1091
)

// appliedBefore reports whether err says that stmt's change is already
// there: an ALTER that adds columns which exist, one that renames
// columns which are gone (renamed), or one that drops an index which is
// gone (each version 5 statement drops one). MySQL 8 has no ADD COLUMN IF NOT
// EXISTS, and an ALTER is atomic on the servers Herald supports (MariaDB
// 10.6+, MySQL 8), so the columns exist (or are gone) only if a run that
// crashed before recording its version made the whole statement.
func appliedBefore(stmt string, err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	switch me.Number {
	case erDupFieldName:
		return true
	case erBadFieldName:
		return strings.Contains(stmt, "RENAME COLUMN")
	case erCantDropFieldOrKey:
		return strings.Contains(stmt, "DROP INDEX")
	}
	return false
}
