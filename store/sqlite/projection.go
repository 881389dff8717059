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

// dialect is the projection SQL's view of this store. SQLite transactions
// hold the whole database (BEGIN IMMEDIATE), so no row locks are needed and
// the store's write slot queues its writers in Go.
func (s *Store) dialect() *projsql.Dialect {
	return &projsql.Dialect{
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

// Apply runs one projection step in one transaction; see store.ProjectionStore.
func (s *Store) Apply(ctx context.Context, p store.ApplyParams, fn func(tx *sql.Tx) error) (store.ApplyResult, error) {
	return s.dialect().Apply(ctx, p, fn)
}

// Fail records a failed projection attempt; see store.ProjectionStore.
func (s *Store) Fail(ctx context.Context, f store.ProjectionFailure) (store.ProjectionState, int, error) {
	return s.dialect().Fail(ctx, f)
}

// ProjectionStats counts projection rows by state.
func (s *Store) ProjectionStats(ctx context.Context, table, projection string) ([]store.ProjectionStats, error) {
	return s.dialect().Stats(ctx, table, projection)
}

// ListProjection returns projection rows of one state.
func (s *Store) ListProjection(ctx context.Context, p store.ProjectionListParams) ([]store.ProjectionRow, error) {
	return s.dialect().List(ctx, p)
}

// ReplayProjection moves dead projection rows back to failed, due now.
func (s *Store) ReplayProjection(ctx context.Context, table, projection string, eventIDs []string) (int64, error) {
	var n int64
	err := s.write(ctx, func() (err error) {
		n, err = s.dialect().Replay(ctx, table, projection, eventIDs)
		return err
	})
	return n, err
}

// ResetProjection deletes a projection's rows and runs reset with them.
func (s *Store) ResetProjection(ctx context.Context, table, projection string, reset func(tx *sql.Tx) error) (int64, error) {
	return s.dialect().Reset(ctx, table, projection, reset)
}

// CleanupProjection deletes old done rows of a projection.
func (s *Store) CleanupProjection(ctx context.Context, table, projection string, olderThan time.Duration, limit int) (int64, error) {
	var n int64
	err := s.write(ctx, func() (err error) {
		n, err = s.dialect().Cleanup(ctx, table, projection, olderThan, limit)
		return err
	})
	return n, err
}

// ScanOutbox returns outbox rows the projection has not finished.
func (s *Store) ScanOutbox(ctx context.Context, p store.OutboxScanParams) ([]store.Record, error) {
	return s.dialect().ScanOutbox(ctx, p)
}

// ApplyBatch runs several projection steps in one transaction; see store.ProjectionStore.
func (s *Store) ApplyBatch(ctx context.Context, ps []store.ApplyParams, fn func(tx *sql.Tx, i int) error) ([]store.ApplyResult, error) {
	return s.dialect().ApplyBatch(ctx, ps, fn)
}
