// Package sqlmaint is the stores' upkeep over each database's SQL pieces:
// retention cleanup in bounded rounds (store.Store.Cleanup) and the
// once-per-interval lock (store.Store.TryLock). A store embeds the
// Maintenance value New makes of its Dialect, once, when it is made.
package sqlmaint

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldhq/herald/store"
)

// DefaultCleanupLimit bounds a cleanup round per state when
// store.CleanupParams.Limit is 0.
const DefaultCleanupLimit = 1000

// Round is the rows one cleanup round deletes.
type Round int

// The cleanup rounds, in the order Cleanup runs them.
const (
	// Delivered rows, older than CleanupParams.Delivered by their last
	// change (their delivery).
	Delivered Round = iota
	// Dead rows, older than CleanupParams.Dead by their last change
	// (their death).
	Dead
	// Pending rows, older than CleanupParams.Active by their creation.
	Pending
)

// Statement is one statement with its arguments.
type Statement struct {
	SQL  string
	Args []any
}

// Dialect is what a store tells the shared upkeep about its database.
type Dialect struct {
	// Name prefixes errors ("mysql store") unless Wrap is set.
	Name string
	// Quote validates and quotes a table name.
	Quote func(table string) (string, error)
	// Scope returns the " AND …" conditions of a scope's tenant and type
	// filters, with ? placeholders, and their arguments.
	Scope func(s store.Scope) (string, []any)
	// Delete returns the statement of one round: it deletes, oldest
	// first, at most LIMIT ? of the round's rows of the table (table as
	// given, quoted as quoted) older than an age, among those filter (from
	// Scope) keeps. Its arguments are the age (bound by Age), filter's
	// arguments and the limit.
	Delete func(table, quoted string, r Round, filter string) string
	// Age binds a round's age.
	Age func(time.Duration) any
	// Lock returns the statements that take the named lock for interval
	// if nobody holds it: the last one changes one row for the winner
	// only.
	Lock func(name string, interval time.Duration) []Statement
	// Exec runs one write statement and returns the rows it changed.
	Exec func(ctx context.Context, q string, args ...any) (int64, error)
	// Wrap, when set, names the operation and its subject in an error;
	// nil prefixes Name.
	Wrap func(op, subject string, err error) error
}

// Maintenance is a store's Cleanup and TryLock, named as store.Store's, so
// that a store that embeds it has them.
type Maintenance struct{ d *Dialect }

// New returns the upkeep of the database d describes; every field but
// Wrap must be set.
func New(d Dialect) Maintenance { return Maintenance{d: &d} }

// wrap names op and subject in err.
func (d *Dialect) wrap(op, subject string, err error) error {
	if d.Wrap != nil {
		return d.Wrap(op, subject, err)
	}
	return fmt.Errorf("%s: %s %s: %w", d.Name, op, subject, err)
}

// TryLock takes the named lock for interval if nobody holds it; see
// store.Store.TryLock.
func (m Maintenance) TryLock(ctx context.Context, name string, interval time.Duration) (bool, error) {
	var n int64
	for _, st := range m.d.Lock(name, interval) {
		var err error
		if n, err = m.d.Exec(ctx, st.SQL, st.Args...); err != nil {
			return false, m.d.wrap("trylock", name, err)
		}
	}
	return n == 1, nil
}

// Cleanup deletes, per state, at most p.Limit (or DefaultCleanupLimit)
// rows older than that state's age, oldest first, and returns how many it
// deleted; a zero age keeps that state's rows. See store.Store.Cleanup.
func (m Maintenance) Cleanup(ctx context.Context, p store.CleanupParams) (int64, error) {
	d := m.d
	quoted, err := d.Quote(p.Table)
	if err != nil {
		return 0, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = DefaultCleanupLimit
	}
	filter, filterArgs := d.Scope(p.Scope)
	var total int64
	for r, age := range []time.Duration{Delivered: p.Delivered, Dead: p.Dead, Pending: p.Active} {
		if age <= 0 {
			continue
		}
		args := append(append([]any{d.Age(age)}, filterArgs...), limit)
		n, err := d.Exec(ctx, d.Delete(p.Table, quoted, Round(r), filter), args...)
		if err != nil {
			return total, d.wrap("cleanup", p.Table, err)
		}
		total += n
	}
	return total, nil
}
