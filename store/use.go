package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// TableUse says which claims beyond a plain lane's read a table: the
// indexes behind them cost every claim and mark of every row a write, so a
// store may give a table only those its lanes use (UseIndexer).
type TableUse struct {
	// Ordered: a lane with per-key ordering claims from the table.
	Ordered bool
	// Tenants: a lane limited to one tenant, or a fair lane, claims from it.
	Tenants bool
}

// Union is what lanes of both uses need.
func (u TableUse) Union(o TableUse) TableUse {
	return TableUse{Ordered: u.Ordered || o.Ordered, Tenants: u.Tenants || o.Tenants}
}

// String names the uses, for messages: "ordered lanes, tenant lanes".
func (u TableUse) String() string {
	var parts []string
	if u.Ordered {
		parts = append(parts, "ordered lanes")
	}
	if u.Tenants {
		parts = append(parts, "tenant-scoped or fair lanes")
	}
	if len(parts) == 0 {
		return "plain lanes"
	}
	return strings.Join(parts, ", ")
}

// UseIndexer is an optional Store ability: tables that carry the indexes
// of ordered and tenant claims only while such lanes read them. MySQL has
// no partial indexes: an index there holds every row, and a claim and a
// mark rewrite each row's entry in it. On PostgreSQL only ordered_claim
// holds every pending row (an index write per insert, and a WAL record a
// log lane decodes). Stores without it give every table every index
// Migrate knows.
type UseIndexer interface {
	// MigrateFor is Migrate that also adds, online, the indexes use needs
	// and table lacks. It never drops an index: other lanes, configured
	// elsewhere, may read the table.
	MigrateFor(ctx context.Context, table string, use TableUse) error
	// MissingIndexes names the indexes use needs that table lacks, without
	// changing anything; nil when it has them all.
	MissingIndexes(ctx context.Context, table string, use TableUse) ([]string, error)
}

// MigrateFor creates or upgrades table for lanes of use: the store's
// MigrateFor where it is a UseIndexer, Migrate elsewhere.
func MigrateFor(ctx context.Context, s Store, table string, use TableUse) error {
	if ui, ok := s.(UseIndexer); ok {
		return ui.MigrateFor(ctx, table, use)
	}
	return s.Migrate(ctx, table)
}

// CheckIndexes returns an error naming the indexes use needs that table
// lacks, and how to add them; nil on stores that are not a UseIndexer.
// who names the reader in the message ("lane \"rooms\"").
func CheckIndexes(ctx context.Context, s Store, table string, use TableUse, who string) error {
	ui, ok := s.(UseIndexer)
	if !ok {
		return nil
	}
	missing, err := ui.MissingIndexes(ctx, table, use)
	if err != nil {
		return fmt.Errorf("%s: checking the indexes of table %s: %w", who, table, err)
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s needs index %s on table %s (%s read it), which the table lacks: "+
		"run `herald migrate` with this lane configured, or store.MigrateFor in a program (it adds them online)",
		ErrMissingIndex, who, strings.Join(missing, ", "), table, use)
}

// ErrMissingIndex says a table lacks an index a lane's claims read
// (UseIndexer).
var ErrMissingIndex = errors.New("missing index")
