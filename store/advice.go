package store

import "context"

// Advisor is an optional Store ability: what in the database's settings
// works against a relay on the given tables, found by reading settings and
// catalogs only. `herald run` logs each piece of advice as a warning when a
// store opens. A store whose database has nothing to say returns none.
type Advisor interface {
	Advice(ctx context.Context, tables []string) ([]string, error)
}
