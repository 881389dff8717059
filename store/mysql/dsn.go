package mysql

import (
	"fmt"

	"github.com/go-sql-driver/mysql"
)

// ValidateDSN checks that dsn parses as a go-sql-driver/mysql DSN without
// connecting, so a config check can refuse it up front. The error names
// the problem, never the DSN (it may hold a password).
func ValidateDSN(dsn string) error {
	if _, err := mysql.ParseDSN(dsn); err != nil {
		return fmt.Errorf("not a MySQL DSN such as user:pass@tcp(127.0.0.1:3306)/db: %w", err)
	}
	return nil
}
