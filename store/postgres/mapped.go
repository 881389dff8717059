package postgres

import (
	"context"
	"database/sql"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/mapsql"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// mapDialect is PostgreSQL's pieces of the mapped tables' statements.
// datetime columns must be timestamptz: a timestamp without time zone
// would be read in the session's time zone.
var mapDialect = mapsql.Dialect{
	Name:      "postgres store",
	Quote:     func(n string) string { return `"` + n + `"` },
	Rebind:    sqlbuild.Rebind,
	NowMs:     "(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
	NowTime:   "clock_timestamp()",
	PlusMs:    func(t string) string { return "(" + t + " + CAST(? AS double precision) * interval '1 millisecond')" },
	TimeMs:    func(col string) string { return "(extract(epoch FROM " + col + ") * 1000)::bigint" },
	Lock:      " FOR UPDATE SKIP LOCKED",
	ForUpdate: " FOR UPDATE",
	Columns: func(ctx context.Context, q mapsql.Runner, table string) (map[string]string, error) {
		return mapsql.ReadColumns(ctx, q, `SELECT lower(column_name), lower(data_type) FROM information_schema.columns
  WHERE table_schema = current_schema() AND table_name = $1`, table)
	},
	Indexes: func(table string) (string, []any) {
		return `SELECT i.relname, x.indisunique, a.attname
FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
  JOIN LATERAL unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, n) ON true
  JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
WHERE t.relnamespace = current_schema()::regnamespace AND t.relname = $1 ORDER BY i.relname, k.n`, []any{table}
	},
	IsInteger:  func(typ string) bool { return typ == "smallint" || typ == "integer" || typ == "bigint" },
	IsDatetime: func(typ string) bool { return typ == "timestamp with time zone" },
	Retry:      retryLoop,
	Returning:  true,
	// As the store's own claims and marks (asyncCommit), set for the
	// statement's own transaction only.
	NoSync: "set_config('synchronous_commit', 'off', true)",
	// Expressions no index serves, for the marks' status test (mapsql's
	// markkey.go): any value but an array turns to text with || ''.
	Unindexed: func(col string, integer bool) string {
		if integer {
			return "(" + col + " + 0)"
		}
		return "(" + col + " || '')"
	},
	Widths: func(ctx context.Context, q mapsql.Runner, table string) (map[string]int, error) {
		return mapsql.ReadWidths(ctx, q, `SELECT column_name, character_maximum_length FROM information_schema.columns
  WHERE table_schema = current_schema() AND table_name = $1 AND character_maximum_length IS NOT NULL`, table)
	},
}

// Compile-time proof that Store can inspect tables for herald adopt.
var _ store.Inspecting = (*Store)(nil)

// MapTable implements store.Mapper.
func (s *Store) MapTable(table string, m store.Mapping) error { return s.mapped.Map(table, m) }

// newMapped returns the store's (empty) set of mapped tables.
func (s *Store) newMapped() *mapsql.Tables {
	return mapsql.NewTables(mapDialect, s.db, func(ctx context.Context, fn func(tx mapsql.Runner) error) error {
		return s.inTx(ctx, func(tx *sql.Tx) error { return fn(tx) })
	})
}

// Inspect implements store.Inspecting.
func (s *Store) Inspect() store.Inspector { return s.mapped }
