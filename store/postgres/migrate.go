package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"math"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlmigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// locksTable is the key of Herald's own tables in herald_migrations.
const locksTable = "herald_locks"

// migrateLockKey is the advisory lock that serializes migrations across
// processes ("herald" in ASCII). PostgreSQL DDL is transactional, so the
// lock is the transaction's own and ends with it.
const migrateLockKey = 0x68657261_6c64

// Migrate creates or upgrades table and Herald's own tables to the latest
// version for plain lanes: MigrateFor with no ordered or tenant use.
func (s *Store) Migrate(ctx context.Context, table string) error {
	return s.MigrateFor(ctx, table, store.TableUse{})
}

// forgetDropped deletes the migration records of table when the table
// itself is gone (dropped by hand), so that migrating makes it again
// instead of finding it up to date.
func forgetDropped(ctx context.Context, tx *sql.Tx, table string) error {
	_, err := tx.ExecContext(ctx,
		"DELETE FROM herald_migrations WHERE table_name = $1 AND to_regclass(quote_ident($1)) IS NULL", table)
	return err
}

// underMigrateLock runs steps in a transaction that holds the migration
// lock, once herald_migrations exists.
func (s *Store) underMigrateLock(ctx context.Context, table string, steps func(tx *sql.Tx) error) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrateLockKey)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS herald_migrations (
  table_name TEXT NOT NULL,
  version INTEGER NOT NULL,
  applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (table_name, version)
)`); err != nil {
			return err
		}
		return steps(tx)
	})
	if err != nil {
		return fmt.Errorf("postgres store: migrate %s: %w", table, err)
	}
	return nil
}

// apply runs the migrations of kind for table that herald_migrations does
// not list yet.
func apply(ctx context.Context, tx *sql.Tx, kind, table string) error {
	return applyUpTo(ctx, tx, kind, table, math.MaxInt, store.TableUse{})
}

// applyUpTo is apply stopping at version last (tests build old tables),
// keeping the indexes lanes of use read where a version drops them
// (keeps).
func applyUpTo(ctx context.Context, tx *sql.Tx, kind, table string, last int, use store.TableUse) error {
	ms, err := sqlmigrate.LoadMigrations(migrationFiles, kind)
	if err != nil {
		return err
	}
	var current int
	if err := tx.QueryRowContext(ctx,
		"SELECT COALESCE(MAX(version), 0) FROM herald_migrations WHERE table_name = $1", table).Scan(&current); err != nil {
		return err
	}
	for _, m := range ms {
		if m.Version <= current || m.Version > last {
			continue
		}
		for _, stmt := range m.Statements(table) {
			if kind == "outbox" && keeps(m.Version, stmt, table, use) {
				continue
			}
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("version %d: %w", m.Version, err)
			}
		}
		if _, err := tx.ExecContext(ctx,
			"INSERT INTO herald_migrations (table_name, version) VALUES ($1, $2)", table, m.Version); err != nil {
			return fmt.Errorf("recording version %d: %w", m.Version, err)
		}
	}
	return nil
}
