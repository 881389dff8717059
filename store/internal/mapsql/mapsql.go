// Package mapsql reads and writes mapped tables (store.Mapping): outbox
// tables that Herald did not make, through their own column names, status
// values and time unit. The three stores share its statements, each giving
// its pieces as a Dialect; a store routes its operations on a mapped table
// here (Tables.Get).
//
// A mapped table has no numeric id Herald can rely on, so rows are found
// by their event id, and a claimed record's store.Record.ID is a handle
// this package hands out and takes back at the mark (Handles). The
// fencing token goes into the mapped fence column, or, without one, into
// the lease owner column after the worker id ("node/lane-01#42"), so that
// a mark finds a row only while the claim that took it still holds it.
package mapsql

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// Dialect is a database's pieces of the mapped statements.
type Dialect struct {
	// Name prefixes errors ("sqlite").
	Name string
	// Quote quotes a validated identifier.
	Quote func(name string) string
	// Rebind turns ? placeholders into the database's; nil keeps ?.
	Rebind func(query string) string
	// NowMs is the database clock in Unix milliseconds.
	NowMs string
	// NowTime is the database clock as a datetime; "" where time_unit
	// datetime is not supported.
	NowTime string
	// PlusMs returns datetime t plus ? milliseconds.
	PlusMs func(t string) string
	// TimeMs returns datetime column col in Unix milliseconds.
	TimeMs func(col string) string
	// Lock ends a locking read (" FOR UPDATE SKIP LOCKED"; "" on SQLite,
	// whose write transaction holds the whole database).
	Lock string
	// ForUpdate ends a mark's locking read, which waits for the rows
	// (" FOR UPDATE"; "" on SQLite).
	ForUpdate string
	// Columns returns the table's columns and their types, lower case;
	// none when the table does not exist.
	Columns func(ctx context.Context, q Runner, table string) (map[string]string, error)
	// Indexes is the query, and its arguments, that reads table's indexes
	// (its primary key among them) as rows of (index name, unique, column)
	// in index and column order.
	Indexes func(table string) (string, []any)
	// IsInteger and IsDatetime say whether a column type holds integers
	// (epoch_ms times, the fence) or datetimes.
	IsInteger, IsDatetime func(typ string) bool
	// Retry runs f again while it fails with what the database says to
	// retry (a deadlock, a serialization failure): a mark that is one
	// statement runs through it in autocommit, saving a transaction's
	// round trips. Nil runs such a mark in a transaction (InTx), as on
	// SQLite, where a transaction costs no round trip.
	Retry func(ctx context.Context, f func() error) error
	// Cursor asks claims to start after the last full read's last row
	// (cursor.go), and PrimaryKey returns a table's primary key columns
	// for it to check that the index order it relies on holds.
	Cursor     bool
	PrimaryKey func(ctx context.Context, q Runner, table string) ([]string, error)
	// PrimaryHint makes a statement find rows by primary key
	// (" FORCE INDEX (PRIMARY)"), used where the id column is the whole
	// key; PrimaryKey tells (markkey.go).
	PrimaryHint string
	// Returning says UPDATE … RETURNING works: claims and batch marks are
	// then one statement each (returning.go). NoSync is a select-list
	// expression that lets a statement's own transaction commit without
	// waiting for its log flush, carried in a CTE of that statement; ""
	// for none.
	Returning bool
	NoSync    string
	// Widths returns the character widths of a table's bounded text
	// columns, by lower-case name; nil where text has no width (SQLite).
	Widths func(ctx context.Context, q Runner, table string) (map[string]int, error)
	// Unchecked returns what to put before an UPDATE of table so that it
	// does not evaluate the table's CHECK constraints, or "" where they
	// must be (one reads a column of written) or there are none
	// (checks.go); nil: updates evaluate them.
	Unchecked func(ctx context.Context, q Runner, table string, written []string) (string, error)
	// Unindexed wraps a column, of an integer type or not, in an
	// expression that compares as the column does but that no index
	// serves (PostgreSQL: "(col + 0)", "(col || '')"), for the marks'
	// status test on tables whose event id has a key (markkey.go); nil:
	// none.
	Unindexed func(col string, integer bool) string
}

// Runner is a *sql.DB, *sql.Conn or *sql.Tx.
type Runner interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ClaimRunner is what a claim's transaction needs of its connection: a
// Runner's, or those of a transaction that sends its statements along with
// others (store/mysql's batchTx: BEGIN with the first read, the lease with
// COMMIT, and an ExecContext whose result is known only at the commit).
type ClaimRunner interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// ClaimTx runs a claim's fn in a write transaction, for a claim that
// leases its rows for lease.
type ClaimTx func(ctx context.Context, lease time.Duration, fn func(tx ClaimRunner) error) error

// InTx runs fn in a write transaction (retrying what the database says
// to retry).
type InTx func(ctx context.Context, fn func(tx Runner) error) error

// Tables holds a store's mapped tables. The zero value is not usable:
// call NewTables.
type Tables struct {
	d       Dialect
	db      Runner
	inTx    InTx
	claimTx ClaimTx // nil: claims run in inTx

	mu sync.RWMutex
	m  map[string]*Table
}

// NewTables returns an empty set of mapped tables on db.
func NewTables(d Dialect, db Runner, inTx InTx) *Tables {
	return &Tables{d: d, db: db, inTx: inTx, m: map[string]*Table{}}
}

// SetClaimTx makes claims run in claimTx's transactions instead of
// NewTables' inTx; call it before the first claim.
func (ts *Tables) SetClaimTx(claimTx ClaimTx) { ts.claimTx = claimTx }

// inClaimTx runs a claim's fn in claimTx, or else in inTx.
func (ts *Tables) inClaimTx(ctx context.Context, lease time.Duration, fn func(tx ClaimRunner) error) error {
	if ts.claimTx != nil {
		return ts.claimTx(ctx, lease, fn)
	}
	return ts.inTx(ctx, func(tx Runner) error { return fn(tx) })
}

// Map makes table a mapped table (store.Mapper).
func (ts *Tables) Map(table string, m store.Mapping) error {
	if err := herald.ValidateIdentifier(table); err != nil {
		return fmt.Errorf("%s: table: %w", ts.d.Name, err)
	}
	m = m.WithDefaults()
	if err := m.Validate(); err != nil {
		return fmt.Errorf("%s: table %s: %w", ts.d.Name, table, err)
	}
	if m.TimeUnit == store.TimeDatetime && ts.d.NowTime == "" {
		return fmt.Errorf("%s: table %s: time_unit: datetime is not supported on this database; use epoch_ms", ts.d.Name, table)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if old, ok := ts.m[table]; ok {
		if !sameMapping(old.m, m) {
			return fmt.Errorf("%s: table %s is mapped twice, differently", ts.d.Name, table)
		}
		return nil
	}
	ts.m[table] = newTable(ts, table, m)
	return nil
}

func sameMapping(a, b store.Mapping) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// autocommit runs fn with the database in autocommit (through
// Dialect.Retry), or in a transaction where the dialect has no Retry.
func (ts *Tables) autocommit(ctx context.Context, fn func(r Runner) error) error {
	if ts.d.Retry == nil {
		return ts.inTx(ctx, fn)
	}
	return ts.d.Retry(ctx, func() error { return fn(ts.db) })
}

// Get returns the mapped table named table, or nil when it is not mapped.
// A nil *Tables has none.
func (ts *Tables) Get(table string) *Table {
	if ts == nil {
		return nil
	}
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return ts.m[table]
}

// Table is one mapped table and the statements' pieces for it.
type Table struct {
	ts      *Tables
	name    string
	quoted  string
	m       store.Mapping
	c       quotedColumns
	handles handles
	// refs number the rows search and replay by query return (refs.go).
	refs   refs
	claims atomic.Uint64 // claims made, for claimOrder
	// nextExpired is when a claim looks for expired leases next (Unix ns).
	nextExpired atomic.Int64
	// ordersByID says claims may use cursors (cursor.go); Check sets it.
	ordersByID, tableLearned atomic.Bool
	// idPrimary says the event id is the whole primary key, which the
	// marks then force (Dialect.PrimaryHint); markStatusExpr is the status
	// column as the marks compare it, once learned (markkey.go).
	idPrimary      atomic.Bool
	markStatusExpr atomic.Value
	// claimIndex is the (status, next_attempt) index claims force where
	// cursors are used ("" for none; cursor.go).
	claimIndex atomic.Value
	cursors    cursors
	// quiet are the retry values claims skip for a moment (quiet.go).
	quiet quietValues
	// ownerWidth is the lease owner column's width; 0: unbounded or not
	// known (owner.go).
	ownerWidth atomic.Int64
	// updatePrefix goes before the lease's and the marks' UPDATEs (a
	// string; checks.go).
	updatePrefix atomic.Value
}

// quotedColumns are the mapped columns, quoted; "" for those not mapped.
type quotedColumns store.Columns

func newTable(ts *Tables, name string, m store.Mapping) *Table {
	q := func(n string) string {
		if n == "" {
			return ""
		}
		return ts.d.Quote(n)
	}
	c := m.Columns
	return &Table{ts: ts, name: name, quoted: q(name), m: m, c: quotedColumns{
		ID: q(c.ID), Type: q(c.Type), Tenant: q(c.Tenant), Key: q(c.Key), Topic: q(c.Topic),
		Headers: q(c.Headers), Payload: q(c.Payload), CreatedAt: q(c.CreatedAt), Status: q(c.Status),
		Attempts: q(c.Attempts), NextAttempt: q(c.NextAttempt), LeaseUntil: q(c.LeaseUntil),
		LeaseOwner: q(c.LeaseOwner), Fence: q(c.Fence), LastError: q(c.LastError), Receipt: q(c.Receipt),
		DeliveredAt: q(c.DeliveredAt),
	}}
}

// rebind spells q's placeholders the database's way.
func (t *Table) rebind(q string) string {
	if t.ts.d.Rebind == nil {
		return q
	}
	return t.ts.d.Rebind(q)
}

// now is the database clock in the table's time unit.
func (t *Table) now() string {
	if t.m.TimeUnit == store.TimeDatetime {
		return t.ts.d.NowTime
	}
	return t.ts.d.NowMs
}

// later is the database clock plus ? milliseconds, in the table's unit.
func (t *Table) later() string {
	if t.m.TimeUnit == store.TimeDatetime {
		return t.ts.d.PlusMs(t.ts.d.NowTime)
	}
	return "(" + t.ts.d.NowMs + " + ?)"
}

// millis is time column col in Unix milliseconds.
func (t *Table) millis(col string) string {
	if t.m.TimeUnit == store.TimeDatetime {
		return t.ts.d.TimeMs(col)
	}
	return col
}

// statusIn is "status IN (?, …)" and its arguments.
func (t *Table) statusIn(values []string) (string, []any) {
	return t.c.Status + " IN (" + sqlbuild.Marks(len(values)) + ")", sqlbuild.StringArgs(values)
}

// or returns col, or a constant where the column is not mapped.
func or(col, constant string) string {
	if col == "" {
		return constant
	}
	return col
}
