package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/projsql"
)

var _ store.ProjectionStore = (*Store)(nil)

// projectionMigrations create and upgrade a projection table. Append only.
// The primary key is the dedupe key; the state index serves status counts,
// the failed-row sweep and retention.
var projectionMigrations = []migration{{
	version: 1,
	stmts: []string{
		`CREATE TABLE IF NOT EXISTS {{T}} (
	projection      TEXT    NOT NULL,
	tenant          TEXT    NOT NULL DEFAULT '',
	event_id        TEXT    NOT NULL,
	state           TEXT    NOT NULL CHECK (state IN ('processing', 'failed', 'done', 'dead')),
	attempts        INTEGER NOT NULL DEFAULT 0,
	last_error      TEXT    NOT NULL DEFAULT '',
	lease_until     INTEGER,
	next_attempt_at INTEGER,
	created_at      INTEGER NOT NULL DEFAULT ({{NOW}}),
	updated_at      INTEGER NOT NULL DEFAULT ({{NOW}}),
	event_type      TEXT    NOT NULL DEFAULT '',
	topic           TEXT    NOT NULL DEFAULT '',
	partition_key   TEXT    NOT NULL DEFAULT '',
	headers         TEXT    NOT NULL DEFAULT '{}',
	payload         BLOB,
	PRIMARY KEY (projection, tenant, event_id)
)`,
		`CREATE INDEX IF NOT EXISTS "{{N}}_state" ON {{T}} (projection, state, updated_at)`,
	},
}}

// projectionDialect is the projection SQL's view of this store, made once
// by New. SQLite transactions hold the whole database (BEGIN IMMEDIATE), so
// no row locks are needed and the store's write slot queues its writers in
// Go: a transaction's (Begin) and a lone statement's (Write).
func (s *Store) projectionDialect() projsql.Dialect {
	return projsql.Dialect{
		Name:  "sqlite",
		DB:    s.db,
		Begin: s.beginWrite,
		Quote: func(n string) string { return `"` + n + `"` },
		Now:   now,
		// Durations are bound in milliseconds, the unit of every column.
		NowPlus:      "(" + now + " + ?)",
		DurArg:       func(d time.Duration) any { return d.Milliseconds() },
		DiffMS:       func(a, b string) string { return "(" + a + " - " + b + ")" },
		EpochMS:      func(col string) string { return col },
		InsertIgnore: " ON CONFLICT DO NOTHING",
		Retryable:    func(err error) bool { return err != nil && strings.Contains(err.Error(), "SQLITE_BUSY") },
		Write:        s.write,
	}
}

// beginWrite takes the store's write slot and opens a transaction; the
// slot is freed by release, after commit or rollback.
func (s *Store) beginWrite(ctx context.Context) (*sql.Tx, func(), error) {
	select {
	case s.writer <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	release := func() { <-s.writer }
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		release()
		return nil, nil, err
	}
	return tx, release, nil
}

// MigrateProjections creates or upgrades the projection table.
func (s *Store) MigrateProjections(ctx context.Context, table string) error {
	qt, err := quote(table)
	if err != nil {
		return err
	}
	return s.write(ctx, func() error {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("sqlite: migrate %s: %w", table, err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return fmt.Errorf("sqlite: migrate %s: %w", table, err)
		}
		err = migrateProjectionsLocked(ctx, conn, table, qt)
		if err == nil {
			_, err = conn.ExecContext(ctx, "COMMIT")
		}
		if err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			return fmt.Errorf("sqlite: migrate %s: %w", table, err)
		}
		return nil
	})
}

func migrateProjectionsLocked(ctx context.Context, conn *sql.Conn, table, qt string) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS herald_migrations (
	table_name TEXT    NOT NULL,
	version    INTEGER NOT NULL,
	applied_at INTEGER NOT NULL DEFAULT (`+now+`),
	PRIMARY KEY (table_name, version)
)`); err != nil {
		return err
	}
	return apply(ctx, conn, table, qt, projectionMigrations)
}
