// Package testenv finds the servers that tests need (from the environment,
// with the local defaults), skips a test when one is unreachable, and fails
// it instead when CI=true. It is the one place that rule lives: the store,
// broker, projector and command tests all call it.
package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"testing"
	"time"
)

// Defaults for the servers on a developer machine and in CI.
const (
	DefaultMySQLDSN    = "root@tcp(127.0.0.1:3306)/test"
	DefaultPostgresDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	DefaultNATSURL     = "nats://127.0.0.1:4222"
)

// MySQLDSN returns HERALD_TEST_MYSQL_DSN or the default.
func MySQLDSN() string { return env("HERALD_TEST_MYSQL_DSN", DefaultMySQLDSN) }

// PostgresDSN returns HERALD_TEST_POSTGRES_DSN or the default.
func PostgresDSN() string { return env("HERALD_TEST_POSTGRES_DSN", DefaultPostgresDSN) }

// NATSURL returns HERALD_TEST_NATS_URL or the default.
func NATSURL() string { return env("HERALD_TEST_NATS_URL", DefaultNATSURL) }

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Unreachable skips t because server could not be reached, or fails it
// when CI=true: in CI a missing server is a broken setup, not a skip.
func Unreachable(t testing.TB, server string, err error) {
	t.Helper()
	Unavailable(t, server+" is unreachable", err)
}

// Unavailable skips t because of what is missing (a server, a program), or
// fails it when CI=true, where the setup must provide everything.
func Unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s and CI=true requires it: %v", what, err)
	}
	t.Skipf("%s (%v); skipping (set CI=true to make this fail)", what, err)
}

// RequireTCP checks that hostport accepts connections.
func RequireTCP(t testing.TB, server, hostport string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", hostport, 2*time.Second)
	if err != nil {
		Unreachable(t, server, err)
		return
	}
	c.Close()
}

// RequireNATS checks the NATS server of NATSURL.
func RequireNATS(t testing.TB) string {
	t.Helper()
	u, err := url.Parse(NATSURL())
	if err != nil {
		t.Fatalf("HERALD_TEST_NATS_URL: %v", err)
	}
	RequireTCP(t, "NATS", u.Host)
	return NATSURL()
}

// RequireDB opens and pings a database, or skips/fails as Unreachable does.
func RequireDB(t testing.TB, driver, dsn, server string) {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err = db.PingContext(ctx)
		cancel()
		db.Close()
	}
	if err != nil {
		Unreachable(t, server, err)
	}
}

// Name returns prefix plus a random suffix, unique across runs and
// processes, for tables, streams and queues.
func Name(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return prefix + "_" + hex.EncodeToString(b[:])
}
