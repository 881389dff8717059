package sqlmigrate

import (
	"slices"
	"testing"
)

func TestMigrationStatements(t *testing.T) {
	m := Migration{Version: 1, SQL: "-- a comment; with a semicolon\nCREATE TABLE {{table}} (a INT);\n\nCREATE INDEX i ON {{table}} (a);\n"}
	got := m.Statements("t1")
	want := []string{"CREATE TABLE t1 (a INT)", "CREATE INDEX i ON t1 (a)"}
	if !slices.Equal(got, want) {
		t.Errorf("Statements = %q, want %q", got, want)
	}
}
