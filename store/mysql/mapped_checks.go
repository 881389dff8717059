package mysql

import (
	"context"

	"github.com/heraldhq/herald/store/internal/mapsql"
)

// uncheckedUpdate is MariaDB's mapsql.Dialect.Unchecked: SET STATEMENT
// turns check_constraint_checks off for one UPDATE, where the table has
// checks, none reads a column Herald writes, and no generated column could
// carry a written value into one. (MySQL keeps JSON in a binary type of
// its own, without a check, and has no such variable.)
func uncheckedUpdate(ctx context.Context, q mapsql.Runner, table string, written []string) (string, error) {
	clauses, err := mapsql.ReadStrings(ctx, q, `SELECT check_clause FROM information_schema.check_constraints
  WHERE constraint_schema = DATABASE() AND table_name = ?`, table)
	if err != nil || len(clauses) == 0 {
		return "", err
	}
	generated, err := mapsql.ReadStrings(ctx, q, `SELECT column_name FROM information_schema.columns
  WHERE table_schema = DATABASE() AND table_name = ? AND is_generated <> 'NEVER'`, table)
	if err != nil || len(generated) > 0 {
		return "", err
	}
	for _, c := range clauses {
		if mapsql.ReadsAny(c, written) {
			return "", nil
		}
	}
	return "SET STATEMENT check_constraint_checks = 0 FOR ", nil
}
