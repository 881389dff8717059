package seedwallet_test

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/sqlite"
)

func TestMain(m *testing.M) {
	// The RocketMQ SDK's package-level janitor and its consumers' sleepers
	// outlive Shutdown (testenv.LeakOptions); they are not ours.
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// backend is one database the tests run on.
type backend struct {
	name string
	open func(t *testing.T) store.Store
}

// backends are SQLite (a file per test), MariaDB and PostgreSQL (skipped
// when unreachable, failed when CI=true).
var backends = []backend{
	{"sqlite", func(t *testing.T) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "seed.db"), sqlite.Options{SynchronousNormal: true})
		return opened(t, s, err, "")
	}},
	{"mariadb", func(t *testing.T) store.Store {
		s, err := mysql.Open(context.Background(), testenv.MySQLDSN(), mysql.Options{})
		return opened(t, s, err, "MySQL/MariaDB")
	}},
	{"postgres", func(t *testing.T) store.Store {
		s, err := postgres.Open(context.Background(), testenv.PostgresDSN(), postgres.Options{})
		return opened(t, s, err, "PostgreSQL")
	}},
}

// opened returns s, closed when the test ends, or stops the test: a
// server's open error means it is unreachable (a failure under CI=true).
func opened(t *testing.T, s store.Store, err error, server string) store.Store {
	t.Helper()
	switch {
	case err != nil && server != "":
		testenv.Unreachable(t, server, err)
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
