package sqltx

import (
	"context"
	"database/sql"
)

// DefaultMaxOpenConns caps a pool a store opens when its options leave
// MaxOpenConns at 0.
const DefaultMaxOpenConns = 20

// SetUpPool sizes a pool a store just opened (maxOpen, or
// DefaultMaxOpenConns; idle connections kept up to the same number, so
// a busy relay does not reconnect) and runs check on it, the store's server
// version check. On a failed check it closes db.
func SetUpPool(ctx context.Context, db *sql.DB, maxOpen int, check func(context.Context, *sql.DB) error) error {
	if maxOpen <= 0 {
		maxOpen = DefaultMaxOpenConns
	}
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)
	if err := check(ctx, db); err != nil {
		db.Close()
		return err
	}
	return nil
}

// InTx runs f in a READ COMMITTED transaction on db, rolled back when f
// fails, and runs it again (see Retry) while the error is retryable.
func InTx(ctx context.Context, db *sql.DB, retryable func(error) bool, f func(tx *sql.Tx) error) error {
	return Retry(ctx, retryable, func() error {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
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
