package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/storetest"
)

func TestProjections(t *testing.T) {
	storetest.RunProjections(t, func(tb testing.TB) store.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := postgres.Open(ctx, testenv.PostgresDSN(), postgres.Options{})
		if err != nil {
			testenv.Unreachable(tb, "PostgreSQL", err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		return s
	})
}
