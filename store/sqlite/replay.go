package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/replaysql"
)

var _ store.Replaying = (*Store)(nil)

// replays is replay by query in SQLite's SQL: times in Unix ms, and no row
// locks, since the write slot and BEGIN IMMEDIATE make each batch the only
// writer.
func (s *Store) replays() replaysql.Replayer {
	return replaysql.Replayer{Name: "sqlite", DB: s.db, Quote: quote, Now: now,
		TimeArg: func(t time.Time) any { return t.UnixMilli() },
		Columns: columns, Scan: scanRecords, Touch: ", updated_at = " + now,
		InTx: s.inWriteTx, Exec: s.exec,
	}
}

// Replays is the store's search and replay by query, with its history.
func (s *Store) Replays() store.QueryReplayer { return s.mapped.Replays(s.replays()) }

// inWriteTx runs f in an immediate transaction in the write slot.
func (s *Store) inWriteTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	return s.write(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := f(tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}
