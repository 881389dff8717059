package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/mapsql"
)

var _ store.UseIndexer = (*Store)(nil)

// laneIndexesVersion is the outbox schema version that drops ordered_claim
// from tables no ordered lane reads (migrations/outbox_0004_lane_indexes.sql).
const laneIndexesVersion = 4

// orderedClaim is the name of table's ordered_claim index: the ordered
// lanes' claims walk it in id order. The other partial indexes hold only
// rows of a tenant or with a partition key, so a plain lane's rows cost
// them nothing and every table keeps them.
func orderedClaim(table string) string { return table + "_ordered_claim" }

// orderedClaimDDL makes ordered_claim as version 2 defined it, online.
func orderedClaimDDL(table, quoted string) string {
	return `CREATE INDEX CONCURRENTLY IF NOT EXISTS "` + orderedClaim(table) + `" ON ` + quoted + ` (id) WHERE status = 'pending'`
}

// keeps reports whether stmt of version is version 4's drop of
// ordered_claim on a table an ordered lane reads, which MigrateFor leaves
// in place. Version 2's drop of the same index must run whatever the use:
// it makes the index again, narrower.
func keeps(version int, stmt, table string, use store.TableUse) bool {
	return use.Ordered && version == laneIndexesVersion && stmt == `DROP INDEX IF EXISTS "`+orderedClaim(table)+`"`
}

// MigrateFor implements store.UseIndexer. It creates or upgrades table and
// Herald's own tables to the latest version in one transaction that holds
// an advisory lock (concurrent callers wait, and the later ones find the
// work done; each version is recorded in herald_migrations keyed by
// (table_name, version)), where version 4 keeps ordered_claim when use has
// ordered lanes; then it adds that index online (CREATE INDEX
// CONCURRENTLY: inserts, claims and marks go on while it reads the table)
// to a table that lacks it. It never drops an index:
// lanes configured elsewhere may read the table. On a mapped table
// (MapTable) it migrates only Herald's own tables and checks the mapped
// one against its mapping.
func (s *Store) MigrateFor(ctx context.Context, table string, use store.TableUse) error {
	quoted, err := quote(table)
	if err != nil {
		return err
	}
	if err := CheckVersion(ctx, s.db); err != nil {
		return err
	}
	mapped := s.mapped.Get(table)
	err = s.underMigrateLock(ctx, table, func(tx *sql.Tx) error {
		if err := apply(ctx, tx, "herald", locksTable); err != nil || mapped != nil {
			return err
		}
		if err := forgetDropped(ctx, tx, table); err != nil {
			return err
		}
		return applyUpTo(ctx, tx, "outbox", table, math.MaxInt, use)
	})
	if err != nil {
		return err
	}
	if mapped != nil {
		return mapped.Check(ctx) // Herald never changes a mapped table
	}
	if !use.Ordered {
		return nil
	}
	if err := s.addOrderedClaim(ctx, table, quoted); err != nil {
		return fmt.Errorf("postgres store: adding the index %s of %s for %s: %w", orderedClaim(table), table, use, err)
	}
	return nil
}

// MissingIndexes implements store.UseIndexer: ordered_claim, when use has
// ordered lanes and table lacks it (or holds only the invalid remains of a
// build that failed).
func (s *Store) MissingIndexes(ctx context.Context, table string, use store.TableUse) ([]string, error) {
	if s.mapped.Get(table) != nil || !use.Ordered {
		return nil, nil // docs/adopt.md names the indexes a mapped table needs
	}
	if _, err := quote(table); err != nil {
		return nil, err
	}
	valid, err := indexValid(ctx, s.db, orderedClaim(table))
	if err != nil {
		return nil, fmt.Errorf("postgres store: indexes of %s: %w", table, err)
	}
	if valid {
		return nil, nil
	}
	return []string{"ordered_claim"}, nil
}

// indexValid reports whether the index name exists (on the search path)
// and is usable: a CREATE INDEX CONCURRENTLY that failed leaves an invalid
// one behind.
func indexValid(ctx context.Context, db mapsql.Runner, name string) (bool, error) {
	var valid bool
	err := db.QueryRowContext(ctx, `SELECT COALESCE((SELECT indisvalid FROM pg_index
  WHERE indexrelid = to_regclass(quote_ident($1))), false)`, name).Scan(&valid)
	return valid, err
}

// buildLockKey serializes the online index builds of MigrateFor across
// processes ("heraldi" in ASCII), apart from migrateLockKey: a build waits
// for every transaction older than it, a migration's included.
const buildLockKey = 0x68_65726164_6969

// buildRetry is how long a process waits before trying the build lock
// again.
const buildRetry = 50 * time.Millisecond

// addOrderedClaim builds ordered_claim online, once across processes: it
// takes the build lock with pg_try_advisory_lock and sleeps between tries,
// since a session blocked in pg_advisory_lock holds a snapshot that the
// holder's CREATE INDEX CONCURRENTLY would wait for (a deadlock). The
// invalid remains of an earlier build that failed are dropped first.
func (s *Store) addOrderedClaim(ctx context.Context, table, quoted string) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for {
		var locked bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", int64(buildLockKey)).Scan(&locked); err != nil {
			return err
		}
		if locked {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(buildRetry):
		}
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(buildLockKey)) //nolint:errcheck // the session's end releases it too
	valid, err := indexValid(ctx, conn, orderedClaim(table))
	if err != nil || valid {
		return err
	}
	if _, err := conn.ExecContext(ctx, `DROP INDEX CONCURRENTLY IF EXISTS "`+orderedClaim(table)+`"`); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, orderedClaimDDL(table, quoted))
	return err
}
