package store

import (
	"strconv"

	"github.com/heraldhq/herald"
)

// Placeholder is the n-th (from 1) bind parameter of a statement in d's
// SQL: "?" on SQLite and MySQL/MariaDB, "$n" on PostgreSQL. Code outside
// the store packages that builds statements from user SQL (configured
// projections) uses it instead of a dialect branch of its own.
func Placeholder(d herald.Dialect, n int) string {
	if d == herald.Postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}
