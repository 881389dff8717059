package sqlite_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store/sqlite"
)

// The docs' plain INSERT, as a producer writes it with literal values.
const plainInsertLiteral = `INSERT INTO herald_outbox (event_id, topic, event_type, payload)
VALUES ('0193a1b2-0000-7000-8000-00000000000%d', 'wallet', 'WalletGiftDebited', '{"gift":"rose"}');`

// Rule: the schema and the docs' plain INSERT work on the system's SQLite
// (Debian 12 ships 3.40, older than the 3.42 Herald's bundled SQLite
// needs for unixepoch('subsec')): through the sqlite3 CLI and Python's
// sqlite3 module, defaults filled by that SQLite, rows relayable.
func TestPlainInsertFromSystemSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(context.Background(), "herald_outbox"); err != nil {
		t.Fatal(err)
	}
	cli := requireProgram(t, "sqlite3")
	if out, err := exec.Command(cli, path, strings.Replace(plainInsertLiteral, "%d", "1", 1)).CombinedOutput(); err != nil {
		t.Fatalf("sqlite3 CLI: %v: %s", err, out)
	}
	py := requireProgram(t, "python3")
	script := `import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit(); print(sqlite3.sqlite_version)`
	if out, err := exec.Command(py, "-c", script, path, strings.Replace(plainInsertLiteral, "%d", "2", 1)).CombinedOutput(); err != nil {
		t.Fatalf("python3 sqlite3: %v: %s", err, out)
	}
	checkPlainRows(t, s, 2)
}

// checkPlainRows checks that n rows were written with the defaults filled
// from the database clock and are claimable.
func checkPlainRows(t *testing.T, s *sqlite.Store, n int) {
	t.Helper()
	var count, sane int
	err := s.DB().QueryRow(`SELECT count(*), sum(created_at > 1700000000000 AND created_at = available_at
		AND abs(created_at - CAST(unixepoch('subsec') * 1000 AS INTEGER)) < 600000)
		FROM herald_outbox WHERE status = 'pending'`).Scan(&count, &sane)
	if err != nil || count != n || sane != n {
		t.Fatalf("want %d pending rows with created_at = available_at = now, got %d (%d sane), %v", n, count, sane, err)
	}
}

func requireProgram(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testenv.Unavailable(t, name+" is not installed", err)
	}
	return p
}

// Rule: a table made by schema version 1 (defaults that need SQLite 3.42)
// is rebuilt by Migrate: rows, ids and the AUTOINCREMENT high-water mark
// kept, and the system's sqlite3 can then INSERT into it.
func TestMigrateRebuildsVersion1Table(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herald.db")
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v1 := strings.NewReplacer("ROUND((julianday('now') - 2440587.5) * 86400000)", "unixepoch('subsec') * 1000")
	for _, stmt := range []string{
		v1.Replace(sqlite.CreateOutboxForTest("herald_outbox")),
		`CREATE TABLE herald_migrations (table_name TEXT NOT NULL, version INTEGER NOT NULL,
			applied_at INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (table_name, version))`,
		`INSERT INTO herald_migrations (table_name, version) VALUES ('herald_outbox', 1)`,
		`INSERT INTO herald_outbox (event_id, topic, event_type) VALUES ('a', 't', 'T'), ('b', 't', 'T'), ('c', 't', 'T')`,
		`DELETE FROM herald_outbox WHERE event_id = 'c'`, // high-water mark 3, max id 2
	} {
		if _, err := s.DB().Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := s.Migrate(context.Background(), "herald_outbox"); err != nil {
		t.Fatal(err)
	}
	var schema string
	if err := s.DB().QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'herald_outbox'`).Scan(&schema); err != nil ||
		strings.Contains(schema, "unixepoch") {
		t.Fatalf("version 1 defaults still there: %q %v", schema, err)
	}
	if _, err := s.DB().Exec(`INSERT INTO herald_outbox (event_id, topic, event_type) VALUES ('d', 't', 'T')`); err != nil {
		t.Fatal(err)
	}
	var ids string
	if err := s.DB().QueryRow(`SELECT group_concat(event_id || id, ',') FROM (SELECT * FROM herald_outbox ORDER BY id)`).Scan(&ids); err != nil ||
		ids != "a1,b2,d4" {
		t.Fatalf("rows after the rebuild = %q (%v), want a1,b2,d4 (ids kept, id 3 never reused)", ids, err)
	}
	cli := requireProgram(t, "sqlite3")
	if out, err := exec.Command(cli, path, strings.Replace(plainInsertLiteral, "%d", "5", 1)).CombinedOutput(); err != nil {
		t.Fatalf("sqlite3 CLI after the rebuild: %v: %s", err, out)
	}
}
