// Package enqueuesql holds the SQL that enqueues events, for each database:
// the multi-row INSERT of the public table contract (docs/sql.md), the
// PostgreSQL NOTIFY that follows it, and the queries that tell which
// database a transaction talks to. It imports nothing of Herald, so that
// the root package (herald.Enqueue on a bare *sql.Tx, which cannot import a
// store) and the store packages can both use it.
package enqueuesql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Columns are the outbox columns an INSERT writes, in the order of a Row's
// arguments.
const Columns = "event_id, tenant, topic, event_type, partition_key, headers, payload, available_at"

// SQLiteNowMillis is the SQLite expression for the database clock in Unix
// milliseconds, the unit of every SQLite timestamp column.
const SQLiteNowMillis = "CAST(unixepoch('subsec') * 1000 AS INTEGER)"

// Row is one event's column values, headers already encoded as JSON.
type Row struct {
	ID, Tenant, Topic, Type, PartitionKey, Headers string
	Payload                                        []byte
	// AvailableAt is when the event may be published; zero means now, by
	// the database clock.
	AvailableAt time.Time
}

// Database builds one database's enqueue statements.
type Database struct {
	quote    func(table string) string
	tuple    func(offset int) string
	conflict string
	timeArg  func(time.Time) any
	notify   bool
}

// SQLite is the enqueue SQL of SQLite.
func SQLite() Database {
	return Database{quote: doubleQuoted, conflict: " ON CONFLICT (event_id) DO NOTHING",
		tuple: func(int) string {
			return "(?, ?, ?, ?, ?, ?, ?, COALESCE(?, " + SQLiteNowMillis + "))"
		},
		timeArg: func(t time.Time) any { return t.UnixMilli() }}
}

// MySQL is the enqueue SQL of MySQL and MariaDB.
func MySQL() Database {
	return Database{quote: func(t string) string { return "`" + t + "`" },
		conflict: " ON DUPLICATE KEY UPDATE event_id = event_id",
		tuple:    func(int) string { return "(?, ?, ?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)))" },
		timeArg:  func(t time.Time) any { return t.UTC() }}
}

// Postgres is the enqueue SQL of PostgreSQL, which also notifies relays.
func Postgres() Database {
	return Database{quote: doubleQuoted, conflict: " ON CONFLICT (event_id) DO NOTHING",
		tuple: func(offset int) string {
			p := make([]string, 8)
			for i := range p {
				p[i] = fmt.Sprintf("$%d", offset+i+1)
			}
			return fmt.Sprintf("(%s, COALESCE(%s::timestamptz, now()))", strings.Join(p[:7], ", "), p[7])
		},
		timeArg: func(t time.Time) any { return t.UTC() }, notify: true}
}

func doubleQuoted(table string) string { return `"` + table + `"` }

// Insert returns one multi-row INSERT of rows into table that skips event
// ids already there, and its arguments. A NULL available_at falls back to
// the database clock.
func (d Database) Insert(table string, rows []Row) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, len(rows)*8)
	fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", d.quote(table), Columns)
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.tuple(len(args)))
		var at any
		if !r.AvailableAt.IsZero() {
			at = d.timeArg(r.AvailableAt)
		}
		payload := r.Payload
		if payload == nil {
			payload = []byte{} // not SQL NULL
		}
		args = append(args, r.ID, r.Tenant, r.Topic, r.Type, r.PartitionKey, r.Headers, payload, at)
	}
	b.WriteString(d.conflict)
	return b.String(), args
}

// AfterInsert wakes relays in other processes where the database can:
// PostgreSQL delivers a NOTIFY on channel when (and only if) tx commits.
func (d Database) AfterInsert(ctx context.Context, tx *sql.Tx, channel string) error {
	if !d.notify {
		return nil
	}
	_, err := tx.ExecContext(ctx, "SELECT pg_notify($1, '')", channel)
	return err
}

// Detect asks tx which database it talks to: "sqlite", "mysql" or
// "postgres". It uses a query that succeeds on MySQL and PostgreSQL and
// fails harmlessly on SQLite (an error does not abort a SQLite
// transaction).
func Detect(ctx context.Context, tx *sql.Tx) (string, error) {
	var version string
	err := tx.QueryRowContext(ctx, "SELECT version()").Scan(&version)
	if err != nil {
		var sqliteVersion string
		if err2 := tx.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&sqliteVersion); err2 == nil {
			return "sqlite", nil
		}
		return "", err
	}
	if strings.Contains(version, "PostgreSQL") {
		return "postgres", nil
	}
	return "mysql", nil
}
