package config

import (
	"errors"
	. "github.com/heraldhq/herald/config"
	"strings"
	"testing"
)

// Rule: HERALD_STORE_DRIVER naming another database than the defaults'
// inherits no SQLite file name: without HERALD_STORE_DSN the error names
// the variable to set, never a DSN the user did not give; a DSN the file
// gives is kept, and an error about it says the driver is the
// environment's; with HERALD_STORE_DSN too, the environment alone works.
func TestEnvStoreDriverWithoutDSN(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("HERALD_STORE_DRIVER", "mysql")
	_, err := Load("", testDrivers)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "store.dsn: is required: HERALD_STORE_DRIVER=mysql is set, so set HERALD_STORE_DSN") ||
		strings.Contains(err.Error(), "herald.db") || strings.Contains(err.Error(), "not a MySQL DSN") {
		t.Errorf("HERALD_STORE_DRIVER=mysql alone: %v; want store.dsn required, naming HERALD_STORE_DSN", err)
	}
	_, err = parse([]byte("store: {dsn: other.db}\n"), "f.yaml")
	if err == nil || !strings.Contains(err.Error(), "store.dsn: not a MySQL DSN") || !strings.Contains(err.Error(), "HERALD_STORE_DRIVER") {
		t.Errorf("a file's SQLite DSN under HERALD_STORE_DRIVER=mysql: %v; want it judged, naming HERALD_STORE_DRIVER", err)
	}
	const dsn = "root@tcp(127.0.0.1:3306)/test"
	if f, err := parse([]byte("store: {dsn: \""+dsn+"\"}\n"), "f.yaml"); err != nil || f.Store.Driver != "mysql" || f.Store.DSN != dsn {
		t.Errorf("a file's MySQL DSN with HERALD_STORE_DRIVER=mysql: %+v, %v", f, err)
	}
	t.Setenv("HERALD_STORE_DSN", dsn)
	if f, err := Load("", testDrivers); err != nil || f.Store.Driver != "mysql" || f.Store.DSN != dsn {
		t.Errorf("HERALD_STORE_DRIVER and HERALD_STORE_DSN without a file: %v", err)
	}
}

// Rule: HERALD_STORE_DRIVER=sqlite over the defaults keeps their file name.
func TestEnvStoreDriverSameAsDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("HERALD_STORE_DRIVER", "sqlite")
	f, err := Load("", testDrivers)
	if err != nil {
		t.Fatal(err)
	}
	if f.Store.DSN != "herald.db" {
		t.Fatalf("HERALD_STORE_DRIVER=sqlite: dsn %q; want the default herald.db", f.Store.DSN)
	}
}
