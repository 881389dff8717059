package postgres

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald"
)

// Drop deletes table, its migration records and what log lanes keep for
// it (publication, slots, positions) (store.Dropper).
func (s *Store) Drop(ctx context.Context, table string) error {
	if err := herald.ValidateIdentifier(table); err != nil {
		return err
	}
	if err := s.dropLog(ctx, table); err != nil {
		return fmt.Errorf("postgres store: drop %s: log lanes: %w", table, err)
	}
	if _, err := s.DB().ExecContext(ctx, fmt.Sprintf(`DROP TABLE IF EXISTS "%s"`, table)); err != nil {
		return fmt.Errorf("postgres store: drop %s: %w", table, err)
	}
	var hasMigrations int
	if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'herald_migrations'").Scan(&hasMigrations); err != nil || hasMigrations == 0 {
		return err // no migrations table: nothing was ever migrated here
	}
	if _, err := s.DB().ExecContext(ctx, "DELETE FROM herald_migrations WHERE table_name = $1", table); err != nil {
		return fmt.Errorf("postgres store: drop %s: %w", table, err)
	}
	return nil
}
