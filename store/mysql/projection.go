package mysql

import (
	"context"
	"database/sql"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/projsql"
	"github.com/heraldhq/herald/store/internal/sqlcommon"
)

var _ store.ProjectionStore = (*Store)(nil)

// dialect is the projection SQL's view of MySQL and MariaDB. Applies run at
// READ COMMITTED (no gap locks on the projection table or the read model).
// An INSERT … ON DUPLICATE KEY UPDATE that meets a key another transaction
// is inserting waits on its lock, then changes nothing (0 rows) once that
// one committed, so the claim resolves to "done". When the first rolls back,
// InnoDB may deadlock the waiters; the loser's transaction (which has not
// run its handler yet) is rerun.
func (s *Store) dialect() *projsql.Dialect {
	return &projsql.Dialect{
		Name:    "mysql store",
		DB:      s.db,
		Begin:   s.beginProjection,
		Quote:   func(n string) string { return "`" + n + "`" },
		Now:     "UTC_TIMESTAMP(6)",
		NowPlus: "(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)",
		DurArg:  func(d time.Duration) any { return sqlcommon.Micros(d) },
		DiffMS: func(a, b string) string {
			return "(TIMESTAMPDIFF(MICROSECOND, " + b + ", " + a + ") DIV 1000)"
		},
		// DATETIME holds UTC without a zone, so the difference from the
		// epoch is right whatever the session's time_zone.
		EpochMS:      func(col string) string { return "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01', " + col + ") DIV 1000)" },
		InsertIgnore: " ON DUPLICATE KEY UPDATE event_id = event_id",
		ForUpdate:    " FOR UPDATE",
		Retryable:    retryable,
	}
}

func (s *Store) beginProjection(ctx context.Context) (*sql.Tx, func(), error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	return tx, func() {}, err
}

// MigrateProjections creates or upgrades the projection table, under the
// same named lock as Migrate.
func (s *Store) MigrateProjections(ctx context.Context, table string) error {
	if _, err := quote(table); err != nil {
		return err
	}
	if err := CheckVersion(ctx, s.db); err != nil {
		return err
	}
	return s.underMigrateLock(ctx, func(conn *sql.Conn) error { return apply(ctx, conn, "projection", table) })
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
