package mysql

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/heraldhq/herald/store"
)

// MultiPool returns the claims' multi-statement pool, for tests.
func (s *Store) MultiPool() *sql.DB { return s.multi }

// ActAsMySQL8 makes the store bound its claims as it does on MySQL 8
// (wait_timeout), for tests on a MariaDB server.
func (s *Store) ActAsMySQL8() { s.mariadb = false }

// FreezeInClaim runs a claim transaction as Claim does, bounded for lease,
// that locks up to limit ready rows of table, reports them on locked and
// then stays silent until thaw is closed, like a relay SIGSTOPped there.
// It returns how the transaction ended.
func (s *Store) FreezeInClaim(ctx context.Context, table string, lease time.Duration, limit int,
	locked chan<- int, thaw <-chan struct{}) error {
	first := true
	return s.inBatchTx(ctx, s.bound.Note(lease), func() bool { return false }, func(tx txRunner) error {
		p := store.ClaimParams{Scope: store.Scope{Table: table}, Lease: lease, Limit: limit}
		recs, err := lockCandidates(ctx, tx, "`"+table+"`", store.StatusPending, p, limit)
		if err != nil || !first {
			return err
		}
		first = false
		locked <- len(recs)
		<-thaw
		return nil
	})
}

// MigrateTo creates or upgrades table to schema version v, not beyond.
func (s *Store) MigrateTo(ctx context.Context, table string, v int) error {
	return s.underMigrateLock(ctx, func(conn *sql.Conn) error {
		if err := apply(ctx, conn, "herald", locksTable); err != nil {
			return err
		}
		return applyUpTo(ctx, conn, "outbox", table, v, store.TableUse{})
	})
}

// LookForExpiredThen runs the part of a claim transaction that looks for
// expired leases in table, then calls during with the transaction still
// open, and rolls it back.
func (s *Store) LookForExpiredThen(ctx context.Context, table string, during func() error) error {
	errDone := errors.New("done")
	err := s.inBatchTx(ctx, s.bound.Note(time.Minute), func() bool { return false }, func(tx txRunner) error {
		p := store.ClaimParams{Scope: store.Scope{Table: table}, Lease: time.Minute, Limit: 10}
		if _, err := lockExpired(ctx, tx, "`"+table+"`", p); err != nil {
			return err
		}
		if err := during(); err != nil {
			return err
		}
		return errDone
	})
	if errors.Is(err, errDone) {
		return nil
	}
	return err
}

// OutboxColumns are the columns CheckTable requires.
var OutboxColumns = outboxColumns

// MariaDB says whether the server is MariaDB.
func (s *Store) MariaDB() bool { return s.mariadb }
