package sqlmigrate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/heraldhq/herald/store"
)

// TableSchema is what CheckTable compares an outbox table with, for one
// database.
type TableSchema struct {
	// Name prefixes errors that are not about the schema ("mysql store").
	Name string
	// Columns lists the columns of the table its one bind parameter names;
	// no rows when there is no such table.
	Columns string
	// Want are the columns of an outbox table at the latest version.
	Want []string
	// Version is the store's store.SchemaChecker.
	Version func(ctx context.Context, table string) (current, latest int, err error)
	// Own is the key of Herald's own tables in herald_migrations, and
	// OwnLatest their latest version.
	Own       string
	OwnLatest int
}

// CheckTable is store.TableChecker on a database whose schema ts
// describes: the table exists, has every column of ts.Want, and it and
// Herald's own tables are at their latest versions. A shortfall is a
// *store.SchemaError; a failed read is returned as it is (the database
// may be down).
func CheckTable(ctx context.Context, db *sql.DB, table string, ts TableSchema) error {
	have, err := tableColumns(ctx, db, ts.Columns, table)
	if err != nil {
		return fmt.Errorf("%s: columns of %s: %w", ts.Name, table, err)
	}
	if len(have) == 0 {
		return &store.SchemaError{Table: table, NoTable: true}
	}
	var missing []string
	for _, c := range ts.Want {
		if !have[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return &store.SchemaError{Table: table, Columns: missing}
	}
	cur, latest, err := ts.Version(ctx, table)
	if err != nil {
		return err
	}
	if cur < latest {
		return &store.SchemaError{Table: table, Version: cur, Latest: latest}
	}
	own, _, err := ts.Version(ctx, ts.Own)
	if err != nil {
		return err
	}
	if own < ts.OwnLatest {
		return &store.SchemaError{Table: ts.Own, Version: own, Latest: ts.OwnLatest, Own: true}
	}
	return nil
}

// tableColumns returns the set of table's columns (empty: no such table).
func tableColumns(ctx context.Context, db *sql.DB, query, table string) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, query, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		have[strings.ToLower(c)] = true
	}
	return have, rows.Err()
}
