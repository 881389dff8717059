package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
	"github.com/heraldhq/herald/store/sqlite"
	"github.com/heraldhq/herald/store/storetest"
)

// TestDocsSQL runs the statements of docs/sql.md's SQLite plain INSERT part
// as written and checks the rows they wrote.
func TestDocsSQL(t *testing.T) {
	ctx := context.Background()
	s := opener(t, sqlite.Options{})(t)
	table := testenv.Name("herald_doc")
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatal(err)
	}
	blocks := dbtest.DocSQL(t, "SQLite", table)
	if len(blocks) != 2 {
		t.Fatalf("docs/sql.md SQLite plain INSERT part has %d sql blocks, want 2", len(blocks))
	}
	if blocks[0] != storetest.PlainInsert(sqlite.Dialect, table) {
		t.Errorf("docs/sql.md shows %q, the conformance suite runs %q", blocks[0], storetest.PlainInsert(sqlite.Dialect, table))
	}
	plainID := herald.NewID()
	if _, err := s.DB().ExecContext(ctx, blocks[0], plainID, "orders", "OrderPlaced", []byte("{}")); err != nil {
		t.Fatalf("the plain INSERT: %v", err)
	}
	for range 2 { // the second run checks the idempotence clause
		if _, err := s.DB().ExecContext(ctx, blocks[1]); err != nil {
			t.Fatalf("the full INSERT: %v", err)
		}
	}
	dbtest.CheckDocRows(t, s, table, plainID)
}

// TestDocsSchema checks that the table definition in docs/sql.md is the
// schema Migrate creates.
func TestDocsSchema(t *testing.T) {
	ctx := context.Background()
	migrated := opener(t, sqlite.Options{})(t)
	if err := migrated.Migrate(ctx, herald.DefaultTable); err != nil {
		t.Fatal(err)
	}
	documented := opener(t, sqlite.Options{})(t)
	if _, err := documented.DB().ExecContext(ctx, docBlock(t, "### Table definition")); err != nil {
		t.Fatalf("the documented table definition: %v", err)
	}
	want, got := schema(t, migrated), schema(t, documented)
	for i := range max(len(want), len(got)) {
		if i >= len(want) || i >= len(got) || want[i] != got[i] {
			t.Fatalf("docs/sql.md table definition differs from Migrate's schema:\nMigrate: %q\ndocs:    %q", want, got)
		}
	}
}

// docBlock returns the first sql block after heading in the SQLite section.
func docBlock(t *testing.T, heading string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "sql.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	text = text[strings.Index(text, "\n## SQLite\n")+1:]
	i := strings.Index(text, "\n"+heading)
	if i < 0 {
		t.Fatalf("docs/sql.md SQLite section has no %q", heading)
	}
	text = text[i:]
	text = text[strings.Index(text, "```sql\n")+len("```sql\n"):]
	return text[:strings.Index(text, "```")]
}

var (
	sqlComment = regexp.MustCompile(`--[^\n]*`)
	spaces     = regexp.MustCompile(`\s+`)
)

// schema returns the database's schema statements, comments and spacing
// normalised, sorted.
func schema(t *testing.T, s store.Store) []string {
	t.Helper()
	rows, err := s.DB().Query(`SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name <> 'sqlite_sequence'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			t.Fatal(err)
		}
		q = spaces.ReplaceAllString(sqlComment.ReplaceAllString(q, ""), " ")
		q = strings.ReplaceAll(strings.ReplaceAll(q, "( ", "("), " )", ")")
		out = append(out, strings.TrimSpace(q))
	}
	slices.Sort(out)
	return out
}
