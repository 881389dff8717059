package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/mapsql"
)

// mapDialect is SQLite's pieces of the mapped tables' statements. SQLite
// has no datetime type: a mapped table's times must be epoch_ms integers.
var mapDialect = mapsql.Dialect{
	Name:  "sqlite",
	Quote: func(n string) string { return `"` + n + `"` },
	NowMs: NowMillis,
	Columns: func(ctx context.Context, q mapsql.Runner, table string) (map[string]string, error) {
		return mapsql.ReadColumns(ctx, q, `SELECT lower(name), lower(type) FROM pragma_table_info(?)`, table)
	},
	// SQLite's type affinity: a declared type containing INT is an integer.
	IsInteger:  func(typ string) bool { return strings.Contains(typ, "int") },
	IsDatetime: func(string) bool { return false },
}

// MapTable implements store.Mapper.
func (s *Store) MapTable(table string, m store.Mapping) error { return s.mapped.Map(table, m) }

// mappedTx runs fn in a write transaction (BEGIN IMMEDIATE, the pool's
// _txlock) holding the store's write slot.
func (s *Store) mappedTx(ctx context.Context, fn func(tx mapsql.Runner) error) error {
	return s.write(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

// newMapped returns the store's (empty) set of mapped tables.
func (s *Store) newMapped(db *sql.DB) *mapsql.Tables {
	return mapsql.NewTables(mapDialect, db, s.mappedTx)
}
