package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/projsql"
	"github.com/heraldhq/herald/store/internal/sqlcommon"
)

var _ store.ProjectionStore = (*Store)(nil)

// dialect is the projection SQL's view of PostgreSQL. Applies run at READ
// COMMITTED: an INSERT … ON CONFLICT DO NOTHING that meets a key another
// transaction is inserting waits for it, then sees its outcome, so a
// concurrent duplicate resolves to "done" (or to a clean claim when the
// other rolled back) instead of an error.
func (s *Store) dialect() *projsql.Dialect {
	return &projsql.Dialect{
		Name:   "postgres store",
		DB:     s.db,
		Begin:  s.beginProjection,
		Dollar: true,
		Quote:  func(n string) string { return `"` + n + `"` },
		// clock_timestamp, not now(): an apply's transaction may be old by
		// the time it marks or compares.
		Now:     "clock_timestamp()",
		NowPlus: "(clock_timestamp() + ? * interval '1 microsecond')",
		// Retention's cutoff: statement_timestamp() is fixed for the
		// statement, so the BRIN index on updated_at can bound the scan.
		CutoffPlus: "(statement_timestamp() + ? * interval '1 microsecond')",
		DurArg:     func(d time.Duration) any { return sqlcommon.Micros(d) },
		DiffMS: func(a, b string) string {
			return "CAST(EXTRACT(EPOCH FROM (" + a + " - " + b + ")) * 1000 AS BIGINT)"
		},
		EpochMS:      func(col string) string { return "CAST(EXTRACT(EPOCH FROM " + col + ") * 1000 AS BIGINT)" },
		InsertIgnore: " ON CONFLICT DO NOTHING",
		Duplicate:    isUniqueViolation,
		ForUpdate:    " FOR UPDATE",
		Retryable:    projectionRetryable,
		BeforeScan:   s.stats.freshen,
	}
}

// projectionRetryable adds lock_not_available (55P03, a lock_timeout the
// user set) to the conflicts a rerun resolves.
func projectionRetryable(err error) bool {
	var pe *pgconn.PgError
	return retryable(err) || errors.As(err, &pe) && pe.Code == "55P03"
}

func (s *Store) beginProjection(ctx context.Context) (*sql.Tx, func(), error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	return tx, func() {}, err
}

// MigrateProjections creates or upgrades the projection table, under the
// same advisory lock as Migrate.
func (s *Store) MigrateProjections(ctx context.Context, table string) error {
	if _, err := quote(table); err != nil {
		return err
	}
	return s.underMigrateLock(ctx, table, func(tx *sql.Tx) error { return apply(ctx, tx, "projection", table) })
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
	return s.dialect().Replay(ctx, table, projection, eventIDs)
}

// ResetProjection deletes a projection's rows and runs reset with them.
func (s *Store) ResetProjection(ctx context.Context, table, projection string, reset func(tx *sql.Tx) error) (int64, error) {
	return s.dialect().Reset(ctx, table, projection, reset)
}

// CleanupProjection deletes old done rows of a projection.
func (s *Store) CleanupProjection(ctx context.Context, table, projection string, olderThan time.Duration, limit int) (int64, error) {
	return s.dialect().Cleanup(ctx, table, projection, olderThan, limit)
}

// ScanOutbox returns outbox rows the projection has not finished.
func (s *Store) ScanOutbox(ctx context.Context, p store.OutboxScanParams) ([]store.Record, error) {
	return s.dialect().ScanOutbox(ctx, p)
}

// ApplyBatch runs several projection steps in one transaction; see store.ProjectionStore.
func (s *Store) ApplyBatch(ctx context.Context, ps []store.ApplyParams, fn func(tx *sql.Tx, i int) error) ([]store.ApplyResult, error) {
	return s.dialect().ApplyBatch(ctx, ps, fn)
}

// isUniqueViolation reports unique_violation (23505).
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
