// Package dbtest holds what the SQL store tests share beyond
// internal/testenv (which finds the servers and skips or fails when one is
// unreachable): the statements docs/sql.md promises, and the ordered-claim
// benchmark and stress runs.
package dbtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
