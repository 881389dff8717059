package mysql

import (
	"context"
	"database/sql"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/projsql"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

var _ store.ProjectionStore = (*Store)(nil)

// projectionDialect is the projection SQL's view of MySQL and MariaDB,
// made once by New. Applies run at READ COMMITTED (no gap locks on the
// projection table or the read model). An INSERT … ON DUPLICATE KEY UPDATE
// that meets a key another transaction is inserting waits on its lock, then
// changes nothing (0 rows) once that one committed, so the claim resolves
// to "done". When the first rolls back, InnoDB may deadlock the waiters;
// the loser's transaction (which has not run its handler yet) is rerun.
func (s *Store) projectionDialect() projsql.Dialect {
	return projsql.Dialect{
		Name:    "mysql store",
		DB:      s.db,
		Begin:   s.beginProjection,
		Quote:   func(n string) string { return "`" + n + "`" },
		Now:     "UTC_TIMESTAMP(6)",
		NowPlus: "(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)",
		DurArg:  func(d time.Duration) any { return sqlbuild.Micros(d) },
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
