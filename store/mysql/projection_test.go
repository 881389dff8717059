package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/storetest"
)

func TestProjections(t *testing.T) {
	storetest.RunProjections(t, func(tb testing.TB) store.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := mysql.Open(ctx, testenv.MySQLDSN(), mysql.Options{})
		if err != nil {
			testenv.Unreachable(tb, "MySQL/MariaDB", err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		return s
	})
}
