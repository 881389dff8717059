package config

import (
	"context"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
)

// openServerStore opens a MySQL/MariaDB or PostgreSQL store. Their errors
// never repeat the DSN, so no password reaches a log.
func openServerStore(ctx context.Context, d herald.Dialect, dsn string) (store.Store, error) {
	if d == herald.MySQL {
		return mysql.Open(ctx, dsn, mysql.Options{})
	}
	return postgres.Open(ctx, dsn, postgres.Options{})
}

// validateDSN parses a MySQL or PostgreSQL DSN without connecting.
func validateDSN(d herald.Dialect, dsn string) error {
	switch d {
	case herald.MySQL:
		return mysql.ValidateDSN(dsn)
	case herald.Postgres:
		return postgres.ValidateDSN(dsn)
	}
	return nil
}
