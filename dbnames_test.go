package herald_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// databaseNames are the words a branch on the kind of database would test.
var databaseNames = map[string]bool{"sqlite": true, "mysql": true, "mariadb": true, "postgres": true, "postgresql": true}

// mayNameDatabases are the packages allowed to branch on a database's name:
// the store packages themselves, the list the binary ships (drivers), the
// frozen detection behind the deprecated herald.Enqueue, and the example
// application, whose own read model's SQL is per database.
var mayNameDatabases = []string{"store/sqlite", "store/mysql", "store/postgres", "drivers", "internal/legacyenqueue", "examples"}

// TestNoDatabaseSwitches: adding a database is one store package plus one
// line in drivers (docs/architecture.md), so no other package's code
// compares a value with a database's name (a switch case or == / !=); what
// differs between databases comes from the store's Dialect or methods.
func TestNoDatabaseSwitches(t *testing.T) {
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || allowedToName(path) {
			return nil
		}
		files++
		for _, at := range databaseBranches(t, path) {
			t.Errorf("%s compares with a database name: branch on the store's Dialect or methods instead", at)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("looked at only %d files", files)
	}
}

func allowedToName(path string) bool {
	dir := filepath.ToSlash(filepath.Dir(path))
	for _, p := range mayNameDatabases {
		if dir == p || strings.HasPrefix(dir, p+"/") {
			return true
		}
	}
	return false
}

// databaseBranches returns the positions in file where a case clause or a
// comparison tests a database name.
func databaseBranches(t *testing.T, path string) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	names := func(exprs ...ast.Expr) {
		for _, e := range exprs {
			if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil && databaseNames[strings.ToLower(v)] {
					found = append(found, fset.Position(lit.Pos()).String())
				}
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CaseClause:
			names(n.List...)
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				names(n.X, n.Y)
			}
		}
		return true
	})
	return found
}
