package herald

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Execer runs one statement. *sql.Tx, *sql.Conn and *sql.DB fit, and so
// does a pgx transaction through postgres.Execer: Outbox.Enqueue takes any
// of them.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Dialect is one database's part of the enqueue SQL. Each store package
// exports its own (sqlite.Dialect, mysql.Dialect, postgres.Dialect); this
// package builds the multi-row INSERT of the public table contract
// (docs/sql.md) from it, and never asks which database it talks to.
type Dialect struct {
	// Name is the database's driver name in the config file.
	Name string
	// Quote returns a validated table name, quoted.
	Quote func(table string) string
	// Placeholder returns the n-th (from 1) bind parameter of a statement:
	// "?" or "$n". Code that builds statements around user SQL (configured
	// projections) uses it too.
	Placeholder func(n int) string
	// TimeParam, when set, wraps available_at's parameter where the
	// database needs to be told its type (PostgreSQL: $8::timestamptz).
	TimeParam func(param string) string
	// Now is the database clock in available_at's type: the value of a row
	// whose event sets no AvailableAt.
	Now string
	// Time returns the bind value of an AvailableAt.
	Time func(time.Time) any
	// OnConflict makes an INSERT skip an event id already in the table.
	OnConflict string
	// AfterInsert, when set, runs in the caller's transaction after the
	// rows: PostgreSQL's NOTIFY, which wakes idle relays in other processes
	// on commit. An Outbox runs it at most every 100 ms (relays that were
	// woken keep looking by themselves).
	AfterInsert func(ctx context.Context, ex Execer, table string) error
}

// valid reports whether d has every piece Outbox needs.
func (d Dialect) valid() bool {
	return d.Name != "" && d.Quote != nil && d.Placeholder != nil && d.Now != "" && d.Time != nil
}

// String returns the dialect's name.
func (d Dialect) String() string { return d.Name }

// insertChunk bounds the rows of one INSERT, well under every database's
// limit of bound parameters (SQLite 32766, MySQL and PostgreSQL 65535).
const insertChunk = 500

// insertColumns are the outbox columns an INSERT writes, in the order of a
// row's arguments.
const insertColumns = "event_id, tenant, topic, event_type, partition_key, headers, payload, available_at"

// row is one event's column values, headers already encoded as JSON.
type row struct {
	id, tenant, topic, typ, key, headers string
	payload                              []byte
	// availableAt is when the event may be published; zero means now, by
	// the database clock.
	availableAt time.Time
}

// insert returns one multi-row INSERT of rows into table that skips event
// ids already there, and its arguments.
func (d Dialect) insert(table string, rows []row) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, len(rows)*8)
	fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", d.Quote(table), insertColumns)
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		d.tuple(&b, len(args))
		var at any
		if !r.availableAt.IsZero() {
			at = d.Time(r.availableAt)
		}
		payload := r.payload
		if payload == nil {
			payload = []byte{} // not SQL NULL
		}
		args = append(args, r.id, r.tenant, r.topic, r.typ, r.key, r.headers, payload, at)
	}
	b.WriteString(d.OnConflict)
	return b.String(), args
}

// tuple writes one row's VALUES tuple whose first parameter comes after
// offset others; a NULL available_at falls back to the database clock.
func (d Dialect) tuple(b *strings.Builder, offset int) {
	b.WriteByte('(')
	for i := 1; i <= 7; i++ {
		b.WriteString(d.Placeholder(offset + i))
		b.WriteString(", ")
	}
	at := d.Placeholder(offset + 8)
	if d.TimeParam != nil {
		at = d.TimeParam(at)
	}
	fmt.Fprintf(b, "COALESCE(%s, %s))", at, d.Now)
}

// Rebind returns query with each ? replaced by d's placeholder of its
// position (unchanged where d's placeholder is ?). The queries it is meant
// for hold no ? inside literals.
func (d Dialect) Rebind(query string) string {
	if d.Placeholder == nil || d.Placeholder(1) == "?" {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] != '?' {
			b.WriteByte(query[i])
			continue
		}
		n++
		b.WriteString(d.Placeholder(n))
	}
	return b.String()
}
