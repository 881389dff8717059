package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ValidateDSN checks that dsn parses as a PostgreSQL connection string (URL
// or key=value) without connecting, so a config check can refuse it up
// front. The error names the problem, never the DSN (it may hold a
// password).
func ValidateDSN(dsn string) error {
	if _, err := pgx.ParseConfig(dsn); err != nil {
		return fmt.Errorf("not a PostgreSQL DSN such as postgres://user@127.0.0.1:5432/db: %w", dsnError(err))
	}
	return nil
}
