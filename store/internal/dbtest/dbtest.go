// Package dbtest helps store tests reach the database servers named by the
// environment: defaults for the local servers, a skip (or, with CI=true, a
// failure) when a server is unreachable, and unique table names.
package dbtest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
)

// Default DSNs for the servers on a developer machine and in CI.
const (
	DefaultMySQLDSN    = "root@tcp(127.0.0.1:3306)/test"
	DefaultPostgresDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
)

// MySQLDSN returns HERALD_TEST_MYSQL_DSN, or DefaultMySQLDSN.
func MySQLDSN() string { return env("HERALD_TEST_MYSQL_DSN", DefaultMySQLDSN) }

// PostgresDSN returns HERALD_TEST_POSTGRES_DSN, or DefaultPostgresDSN.
func PostgresDSN() string { return env("HERALD_TEST_POSTGRES_DSN", DefaultPostgresDSN) }

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Unreachable skips the test because the server could not be reached, or
// fails it when CI=true: in CI a missing server is a broken setup.
func Unreachable(t testing.TB, server string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s unreachable (CI=true, so this fails): %v", server, err)
	}
	t.Skipf("%s unreachable, skipping: %v", server, err)
}

// Table returns a fresh table name with prefix, unique across runs.
func Table(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return prefix + "_" + hex.EncodeToString(b[:])
}
