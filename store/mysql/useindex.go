package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald/store"
)

var _ store.UseIndexer = (*Store)(nil)

// useIndex is an index that only some lanes read (schema version 5).
type useIndex struct {
	name, columns string
	// neededBy reports whether lanes of use read it.
	neededBy func(store.TableUse) bool
}

// useIndexes are the indexes a table carries only while lanes that read
// them are configured (migrations/outbox_0005_lane_indexes.sql), with the
// columns schema version 2 gave them.
var useIndexes = []useIndex{
	{name: "ordered_claim", columns: "ordered_pending, id, ordered_available_at",
		neededBy: func(u store.TableUse) bool { return u.Ordered }},
	{name: "key_order", columns: "partition_key, tenant, key_status, id",
		neededBy: func(u store.TableUse) bool { return u.Ordered }},
	{name: "tenant_claim", columns: "tenant, tenant_status, tenant_available_at, id",
		neededBy: func(u store.TableUse) bool { return u.Tenants }},
}

// neededIndexes names the indexes lanes of use read.
func neededIndexes(use store.TableUse) []useIndex {
	var out []useIndex
	for _, ix := range useIndexes {
		if ix.neededBy(use) {
			out = append(out, ix)
		}
	}
	return out
}

// MigrateFor implements store.UseIndexer: Migrate, whose version 5 then
// keeps the indexes use needs, and those indexes added (online) to a table
// that lacks them. On a mapped table (MapTable) it migrates only Herald's
// own tables and checks the mapped one against its mapping.
func (s *Store) MigrateFor(ctx context.Context, table string, use store.TableUse) error {
	quoted, err := quote(table)
	if err != nil {
		return err
	}
	if err := CheckVersion(ctx, s.db); err != nil {
		return err
	}
	mapped := s.mappedTable(table)
	err = s.underMigrateLock(ctx, func(conn *sql.Conn) error {
		if err := apply(ctx, conn, "herald", locksTable); err != nil || mapped != nil {
			return err
		}
		if err := forgetDropped(ctx, conn, table); err != nil {
			return err
		}
		if err := applyUpTo(ctx, conn, "outbox", table, math.MaxInt, use); err != nil {
			return err
		}
		return addIndexes(ctx, conn, table, quoted, use)
	})
	if err != nil || mapped == nil {
		return err
	}
	return mapped.Check(ctx) // Herald never changes a mapped table
}

// MissingIndexes implements store.UseIndexer.
func (s *Store) MissingIndexes(ctx context.Context, table string, use store.TableUse) ([]string, error) {
	if s.mappedTable(table) != nil {
		return nil, nil // docs/adopt.md names the indexes a mapped table needs
	}
	if _, err := quote(table); err != nil {
		return nil, err
	}
	have, err := indexNames(ctx, s.db, table)
	if err != nil {
		return nil, fmt.Errorf("mysql store: indexes of %s: %w", table, err)
	}
	var missing []string
	for _, ix := range lacking(have, use) {
		missing = append(missing, ix.name)
	}
	return missing, nil
}

// lacking returns the indexes use needs that are not in have.
func lacking(have map[string]bool, use store.TableUse) []useIndex {
	var out []useIndex
	for _, ix := range neededIndexes(use) {
		if !have[ix.name] {
			out = append(out, ix)
		}
	}
	return out
}

// addIndexes adds the indexes use needs that table lacks, in one online
// ALTER (INPLACE, LOCK=NONE): inserts, claims and marks go on while it
// reads the table; it holds the exclusive metadata lock for a moment at its
// start and end.
func addIndexes(ctx context.Context, conn *sql.Conn, table, quoted string, use store.TableUse) error {
	have, err := indexNames(ctx, conn, table)
	if err != nil {
		return fmt.Errorf("mysql store: indexes of %s: %w", table, err)
	}
	var adds []string
	for _, ix := range lacking(have, use) {
		adds = append(adds, "ADD INDEX "+ix.name+" ("+ix.columns+")")
	}
	if len(adds) == 0 {
		return nil
	}
	q := "ALTER TABLE " + quoted + " " + strings.Join(adds, ", ") + ", ALGORITHM=INPLACE, LOCK=NONE"
	if _, err := conn.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("mysql store: adding the indexes %s of %s: %w", use, table, err)
	}
	return nil
}

// queryer is a pool or one connection.
type queryer interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// indexNames returns the names of table's indexes in the current database.
func indexNames(ctx context.Context, db queryer, table string) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT index_name FROM information_schema.statistics
WHERE table_schema = DATABASE() AND table_name = ?`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		have[name] = true
	}
	return have, rows.Err()
}

// dropIndex matches a statement that only drops one index (version 5's);
// version 2's rebuilds, which drop and add, must run whatever the use.
var dropIndex = regexp.MustCompile("^ALTER TABLE `\\w+` DROP INDEX (\\w+), ALGORITHM=INPLACE, LOCK=NONE$")

// keeps reports whether stmt only drops an index that lanes of use read,
// which MigrateFor leaves in place.
func keeps(stmt string, use store.TableUse) bool {
	m := dropIndex.FindStringSubmatch(stmt)
	return m != nil && slices.ContainsFunc(neededIndexes(use), func(ix useIndex) bool { return ix.name == m[1] })
}

// The server's error for FORCE INDEX of an index the table lacks.
const erKeyDoesNotExist = 1176

// explainMissingIndex turns the server's error for a FORCE INDEX of an
// index the table lacks into store.ErrMissingIndex, naming the fix:
// tables carry the ordered and tenant indexes only for lanes that read
// them (schema version 5).
func explainMissingIndex(err error, table string, use store.TableUse) error {
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != erKeyDoesNotExist {
		return err
	}
	return fmt.Errorf("%w: table %s lacks an index that %s read (%v): run `herald migrate` with the lane configured, "+
		"or store.MigrateFor in a program", store.ErrMissingIndex, table, use, err)
}
