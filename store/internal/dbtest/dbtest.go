// Package dbtest helps store tests reach the database servers named by the
// environment: defaults for the local servers, a skip (or, with CI=true, a
// failure) when a server is unreachable, and unique table names.
package dbtest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
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

// DocSQL returns the ```sql blocks of the "### The plain INSERT" part of
// section (a "## " heading) of docs/sql.md, in order, with the default
// table name replaced by table: the statements that the docs promise work.
// Tests run in their package directory, two levels below the repository.
func DocSQL(t testing.TB, section, table string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "sql.md"))
	if err != nil {
		t.Fatalf("reading docs/sql.md: %v", err)
	}
	text := string(raw)
	start := strings.Index(text, "\n## "+section+"\n")
	if start < 0 {
		t.Fatalf("docs/sql.md has no section %q", section)
	}
	text = text[start+1:]
	if end := strings.Index(text[3:], "\n## "); end >= 0 {
		text = text[:end+3]
	}
	part := strings.Index(text, "\n### The plain INSERT\n")
	if part < 0 {
		t.Fatalf("docs/sql.md section %q has no plain INSERT part", section)
	}
	text = text[part+1:]
	if end := strings.Index(text[4:], "\n### "); end >= 0 {
		text = text[:end+4]
	}
	var blocks []string
	for {
		i := strings.Index(text, "```sql\n")
		if i < 0 {
			break
		}
		text = text[i+len("```sql\n"):]
		j := strings.Index(text, "```")
		if j < 0 {
			t.Fatalf("docs/sql.md: unclosed sql block in %q", section)
		}
		blocks = append(blocks, strings.ReplaceAll(strings.TrimSpace(text[:j]), "herald_outbox", table))
		text = text[j+3:]
	}
	return blocks
}
