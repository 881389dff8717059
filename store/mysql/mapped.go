package mysql

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/mapsql"
)

// epoch is the zero of Unix time; TIMESTAMPDIFF from it is free of the
// session's time zone, which UNIX_TIMESTAMP of a DATETIME is not.
const epoch = "'1970-01-01 00:00:00'"

// mapDialect is MySQL's and MariaDB's pieces of the mapped tables'
// statements. datetime columns (DATETIME, TIMESTAMP) hold UTC, as
// Herald's own do.
var mapDialect = mapsql.Dialect{
	Name:      "mysql store",
	Quote:     func(n string) string { return "`" + n + "`" },
	NowMs:     "(TIMESTAMPDIFF(MICROSECOND, " + epoch + ", UTC_TIMESTAMP(6)) DIV 1000)",
	NowTime:   "UTC_TIMESTAMP(6)",
	PlusMs:    func(t string) string { return "(" + t + " + INTERVAL (? * 1000) MICROSECOND)" },
	TimeMs:    func(col string) string { return "(TIMESTAMPDIFF(MICROSECOND, " + epoch + ", " + col + ") DIV 1000)" },
	Lock:      lockingSuffix,
	ForUpdate: " FOR UPDATE",
	Columns: func(ctx context.Context, q mapsql.Runner, table string) (map[string]string, error) {
		return mapsql.ReadColumns(ctx, q, `SELECT LOWER(column_name), LOWER(data_type) FROM information_schema.columns
  WHERE table_schema = DATABASE() AND table_name = ?`, table)
	},
	Indexes: func(table string) (string, []any) {
		return `SELECT index_name, non_unique = 0, COALESCE(column_name, '') FROM information_schema.statistics
  WHERE table_schema = DATABASE() AND table_name = ? ORDER BY index_name, seq_in_index`, []any{table}
	},
	IsInteger:   func(typ string) bool { return strings.HasSuffix(typ, "int") },
	IsDatetime:  func(typ string) bool { return typ == "datetime" || typ == "timestamp" },
	Retry:       retryLoop,
	Cursor:      true,
	PrimaryHint: " FORCE INDEX (PRIMARY)",
	Widths: func(ctx context.Context, q mapsql.Runner, table string) (map[string]int, error) {
		return mapsql.ReadWidths(ctx, q, `SELECT column_name, character_maximum_length FROM information_schema.columns
  WHERE table_schema = DATABASE() AND table_name = ? AND character_maximum_length IS NOT NULL`, table)
	},
	PrimaryKey: func(ctx context.Context, q mapsql.Runner, table string) ([]string, error) {
		return mapsql.ReadStrings(ctx, q, `SELECT column_name FROM information_schema.key_column_usage
  WHERE table_schema = DATABASE() AND table_name = ? AND constraint_name = 'PRIMARY' ORDER BY ordinal_position`, table)
	},
}

// Compile-time proof that Store can inspect tables for herald adopt.
var _ store.Inspecting = (*Store)(nil)

// MapTable implements store.Mapper.
func (s *Store) MapTable(table string, m store.Mapping) error { return s.mappedTables().Map(table, m) }

// mappedTables returns the store's mapped tables, made on first use.
func (s *Store) mappedTables() *mapsql.Tables {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mapped == nil {
		d := mapDialect
		if s.mariadb {
			d.Unchecked = uncheckedUpdate
		}
		s.mapped = mapsql.NewTables(d, s.db, func(ctx context.Context, fn func(tx mapsql.Runner) error) error {
			return s.inTx(ctx, func(tx *sql.Tx) error { return fn(tx) })
		})
		// Claims in the store's own claim transactions: on its
		// multi-statement pool, two round trips instead of five (BEGIN
		// rides on the first read, the lease UPDATE on COMMIT).
		s.mapped.SetClaimTx(func(ctx context.Context, lease time.Duration, fn func(tx mapsql.ClaimRunner) error) error {
			return s.inClaimTx(ctx, s.bound.Note(lease), func() bool { return false }, func(tx txRunner) error { return fn(tx) })
		})
	}
	return s.mapped
}

// mappedTable returns table's mapping, or nil when it is Herald's own.
func (s *Store) mappedTable(table string) *mapsql.Table {
	s.mu.Lock()
	ts := s.mapped
	s.mu.Unlock()
	return ts.Get(table)
}

// Inspect implements store.Inspecting.
func (s *Store) Inspect() store.Inspector { return s.mappedTables() }

// Mapped returns table's mapping, or nil when it is Herald's own: the
// binary log reader (store/mysql/binlog) reads and marks a mapped table's
// rows through it.
func (s *Store) Mapped(table string) *mapsql.Table { return s.mappedTable(table) }
