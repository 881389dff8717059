package mysql

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald"
)

// Drop deletes table, its migration records and what its log lanes keep
// (positions and unapplied marks) (store.Dropper).
func (s *Store) Drop(ctx context.Context, table string) error {
	if err := herald.ValidateIdentifier(table); err != nil {
		return err
	}
	if _, err := s.DB().ExecContext(ctx, fmt.Sprintf("DROP TABLE IF EXISTS `%s`", table)); err != nil {
		return fmt.Errorf("mysql store: drop %s: %w", table, err)
	}
	var hasMigrations int
	if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'herald_migrations'").Scan(&hasMigrations); err != nil || hasMigrations == 0 {
		return err // no migrations table: nothing was ever migrated here
	}
	if _, err := s.DB().ExecContext(ctx, "DELETE FROM herald_migrations WHERE table_name = ?", table); err != nil {
		return fmt.Errorf("mysql store: drop %s: %w", table, err)
	}
	return s.dropLogMarks(ctx, table)
}

// dropLogMarks deletes the log lanes' positions and unapplied marks of
// table. Marks name rows by id, and a table made again under the name
// numbers its rows from 1 again; a position would have a lane made again
// read the dropped table's rows from the binary log and publish them.
func (s *Store) dropLogMarks(ctx context.Context, table string) error {
	var has int
	if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'herald_log_marks'").Scan(&has); err != nil || has == 0 {
		return err
	}
	for _, q := range []string{"DELETE FROM herald_log_marks WHERE table_name = ?", "DELETE FROM herald_log_lanes WHERE table_name = ?"} {
		if _, err := s.DB().ExecContext(ctx, q, table); err != nil {
			return fmt.Errorf("mysql store: drop %s: log lanes: %w", table, err)
		}
	}
	return nil
}
