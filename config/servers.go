package config

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// openServerStore opens a MySQL/MariaDB or PostgreSQL store.
func openServerStore(ctx context.Context, d herald.Dialect, dsn string) (store.Store, error) {
	return nil, fmt.Errorf("%w: store.driver: %s is not wired yet", ErrInvalid, d)
}
