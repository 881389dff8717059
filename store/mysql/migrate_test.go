package mysql_test

import (
	"context"
	"sync"
	"testing"

	"github.com/heraldhq/herald/internal/testenv"
)

// TestMigrateRace runs Migrate from several stores at once, as several
// relays starting together would: all succeed, each version is applied once.
func TestMigrateRace(t *testing.T) {
	table := testenv.Name("herald_mig")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		s := openStore(t)
		wg.Go(func() { errs <- s.Migrate(context.Background(), table) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
	s := openStore(t)
	t.Cleanup(func() {
		_, _ = s.DB().Exec("DROP TABLE IF EXISTS `" + table + "`")
		_, _ = s.DB().Exec("DELETE FROM herald_migrations WHERE table_name = ?", table)
	})
	var n int
	if err := s.DB().QueryRow("SELECT COUNT(*) FROM herald_migrations WHERE table_name = ?", table).Scan(&n); err != nil || n != 1 {
		t.Errorf("herald_migrations has %d rows for the table (err %v), want 1", n, err)
	}
	if err := s.Migrate(context.Background(), "bad;name"); err == nil {
		t.Error("Migrate accepted an invalid table name")
	}
}
