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
	// A rowid alias (INTEGER PRIMARY KEY) is in no index list: the primary
	// key is read from the table's columns.
	Indexes: func(table string) (string, []any) {
		return `SELECT 'primary key', 1, name FROM (SELECT name, pk FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk)
UNION ALL SELECT name, "unique", col FROM (SELECT il.name, il."unique", ii.name AS col FROM pragma_index_list(?) il,
  pragma_index_info(il.name) ii ORDER BY il.name, ii.seqno)`, []any{table, table}
	},
	// SQLite's type affinity: a declared type containing INT is an integer.
	IsInteger:  func(typ string) bool { return strings.Contains(typ, "int") },
	IsDatetime: func(string) bool { return false },
}

// Compile-time proof that Store can inspect tables for herald adopt.
var _ store.Inspecting = (*Store)(nil)

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

// Inspect implements store.Inspecting.
func (s *Store) Inspect() store.Inspector { return s.mapped }
