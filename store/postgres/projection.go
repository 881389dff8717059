package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/projsql"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

var _ store.ProjectionStore = (*Store)(nil)

// projectionDialect is the projection SQL's view of PostgreSQL, made once by
// New. Applies run at READ COMMITTED: an INSERT … ON CONFLICT DO NOTHING
// that meets a key another transaction is inserting waits for it, then sees
// its outcome, so a concurrent duplicate resolves to "done" (or to a clean
// claim when the other rolled back) instead of an error.
func (s *Store) projectionDialect() projsql.Dialect {
	var pipeline func(context.Context, []store.Stmt) (int, error)
	if s.pipelined {
		pipeline = s.pipelineTx
	}
	return projsql.Dialect{
		Pipeline: pipeline,
		Name:     "postgres store",
		DB:       s.db,
		Begin:    s.beginProjection,
		Dollar:   true,
		Quote:    func(n string) string { return `"` + n + `"` },
		// clock_timestamp, not now(): an apply's transaction may be old by
		// the time it marks or compares.
		Now:     "clock_timestamp()",
		NowPlus: "(clock_timestamp() + ? * interval '1 microsecond')",
		// Retention's cutoff: statement_timestamp() is fixed for the
		// statement, so the BRIN index on updated_at can bound the scan.
		CutoffPlus: "(statement_timestamp() + ? * interval '1 microsecond')",
		DurArg:     func(d time.Duration) any { return sqlbuild.Micros(d) },
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

// isUniqueViolation reports unique_violation (23505).
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
