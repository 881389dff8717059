package postgres

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store"
)

// Driver describes the store driver "postgres" (PostgreSQL) to Herald's config
// loader.
type Driver struct{}

// Name implements store.Driver.
func (Driver) Name() string { return "postgres" }

// NewConfig implements store.Driver.
func (Driver) NewConfig() store.DriverConfig { return &Config{} }

// Config is the postgres part of the `store` section: it has no keys beyond
// driver, dsn and migrate.
type Config struct{}

// Validate implements store.DriverConfig: the DSN parses.
func (*Config) Validate(dsn string) error {
	if err := ValidateDSN(dsn); err != nil {
		return fmt.Errorf("dsn: %w", err)
	}
	return nil
}

// Open implements store.DriverConfig. Its errors never repeat the DSN, so
// no password reaches a log.
func (*Config) Open(ctx context.Context, dsn string) (store.Store, error) {
	return Open(ctx, dsn, Options{})
}
