package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// Rule: `herald run --no-migrate` on a lane whose table of Herald's own is
// missing, or behind this build's schema, stops at start with exit 2 (a
// configuration error, not a database outage) naming the lane and the
// table and saying to run `herald migrate`; on SQLite and PostgreSQL here,
// on MariaDB in TestRunRefusesWhatWaitingCannotFix.
func TestRunNoMigrateSaysHeraldMigrate(t *testing.T) {
	for _, db := range inspectDBs {
		if db.name == "MariaDB" {
			continue
		}
		for _, behind := range []bool{false, true} {
			name := db.name + " missing"
			if behind {
				name = db.name + " behind"
			}
			t.Run(name, func(t *testing.T) { testNoMigrate(t, db, behind) })
		}
	}
}

func testNoMigrate(t *testing.T, db inspectDB, behind bool) {
	dir := t.TempDir()
	s := db.open(t, dir)
	table := testenv.Name("nomigrate_outbox")
	t.Cleanup(func() {
		_ = s.Drop(context.Background(), table)
		s.Close()
	})
	want := []string{"store: lane la: table " + table + " does not exist", "run `herald migrate`"}
	if behind {
		setBehind(t, s, table)
		want[0] = "store: lane la: table " + table + " is at schema version"
	}
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, "store: "+db.store(dir)+"\nbrokers:\n  out: {type: stdout}\nlanes:\n"+
		"  - {name: la, table: "+table+", destination: x}\n")
	code, out := runChildSync(t, dir, "run", "--no-migrate", "--config", cfg)
	if code != ExitUsage {
		t.Errorf("exit %d, want %d:\n%s", code, ExitUsage, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the output does not say %q:\n%s", w, out)
		}
	}
}

// setBehind migrates table and forgets its latest migration, as if an
// older build had migrated it.
func setBehind(t *testing.T, s store.Store, table string) {
	t.Helper()
	ctx := context.Background()
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatal(err)
	}
	_, latest, err := s.SchemaVersion(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	d := s.Dialect()
	q := "DELETE FROM herald_migrations WHERE table_name = " + d.Placeholder(1) + " AND version = " + d.Placeholder(2)
	if _, err := s.DB().Exec(q, table, latest); err != nil {
		t.Fatal(err)
	}
}
