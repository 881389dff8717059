// Package sqlmigrate reads the stores' versioned migration files and the
// recorded schema version of a table.
package sqlmigrate

import (
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Migration is one versioned schema step for a kind of table: "outbox"
// (applied per outbox table, {{table}} in the text) or "herald" (Herald's
// own tables).
type Migration struct {
	Version int
	SQL     string
}

// LoadMigrations returns the migrations of kind in fsys, by version. File
// names are migrations/<kind>_<version>_<what>.sql.
func LoadMigrations(fsys fs.FS, kind string) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/"+kind+"_*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/"+kind+"_")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: bad version", name)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// Statements returns the statements of m for table: the text split on
// semicolons at line ends, comment lines dropped. Migration files hold no
// semicolons inside literals.
func (m Migration) Statements(table string) []string {
	src := strings.ReplaceAll(m.SQL, "{{table}}", table)
	var lines []string
	for _, l := range strings.Split(src, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, l)
		}
	}
	var out []string
	for _, st := range strings.Split(strings.Join(lines, "\n")+"\n", ";\n") {
		if st = strings.TrimSpace(st); st != "" {
			out = append(out, st)
		}
	}
	return out
}
