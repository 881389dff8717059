package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/store"
)

// Driver describes the store driver "sqlite" to Herald's config loader.
type Driver struct{}

// Name implements store.Driver.
func (Driver) Name() string { return "sqlite" }

// NewConfig implements store.Driver.
// Its default is filled in, so that `herald config print` shows it.
func (Driver) NewConfig() store.DriverConfig { return &Config{Synchronous: "full"} }

// Config is the sqlite part of the `store` section.
type Config struct {
	// Synchronous is full (default, survives power loss) or normal
	// (Options.SynchronousNormal).
	Synchronous string `yaml:"synchronous"`
}

// Validate implements store.DriverConfig; any file name is a DSN.
func (c *Config) Validate(string) error {
	switch c.Synchronous {
	case "", "full", "normal":
		return nil
	}
	return fmt.Errorf("synchronous: %q is not full or normal", c.Synchronous)
}

// Open implements store.DriverConfig.
func (c *Config) Open(ctx context.Context, dsn string) (store.Store, error) {
	return Open(ctx, dsn, Options{SynchronousNormal: c.Synchronous == "normal"})
}

// DefaultDSN implements store.DefaultDSNer.
func (c *Config) DefaultDSN() string { return "herald.db" }

// File implements store.FileDatabase: "file:x.db?…" names x.db.
func (c *Config) File(dsn string) string {
	path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	return path
}
