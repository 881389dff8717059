package herald

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Dialect is the kind of database an outbox lives in. The INSERT that
// enqueues is the one piece of SQL in this package, because it is the public
// table contract (docs/sql.md) that programs in any language follow too;
// everything else lives in the store packages.
type Dialect int

// The supported database kinds.
const (
	SQLite Dialect = iota + 1
	MySQL
	Postgres
)

// String returns the dialect's config name: sqlite, mysql or postgres.
func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case MySQL:
		return "mysql"
	case Postgres:
		return "postgres"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// ParseDialect returns the Dialect named by a config driver name.
func ParseDialect(name string) (Dialect, error) {
	for _, d := range []Dialect{SQLite, MySQL, Postgres} {
		if d.String() == name {
			return d, nil
		}
	}
	return 0, fmt.Errorf("unknown database driver %q (want sqlite, mysql or postgres)", name)
}

func (d Dialect) valid() bool { return d >= SQLite && d <= Postgres }

// insertChunk bounds the rows of one INSERT, well under every database's
// limit of bound parameters (SQLite 32766, MySQL and PostgreSQL 65535).
const insertChunk = 500

const insertColumns = "event_id, tenant, topic, event_type, partition_key, headers, payload, available_at"

// insert returns one multi-row INSERT for rows that skips existing event ids.
func (d Dialect) insert(table string, rows []row) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, len(rows)*8)
	if d == MySQL {
		fmt.Fprintf(&b, "INSERT INTO `%s` (%s) VALUES ", table, insertColumns)
	} else {
		fmt.Fprintf(&b, `INSERT INTO "%s" (%s) VALUES `, table, insertColumns)
	}
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.valuesTuple(len(args)))
		ev := r.event
		args = append(args, ev.ID, ev.Tenant, ev.Topic, ev.Type, ev.PartitionKey,
			r.headers, payloadArg(ev.Payload), d.timeArg(ev))
	}
	switch d {
	case MySQL:
		b.WriteString(" ON DUPLICATE KEY UPDATE event_id = event_id")
	default:
		b.WriteString(" ON CONFLICT (event_id) DO NOTHING")
	}
	return b.String(), args
}

// valuesTuple returns "(…)" with 8 placeholders; a NULL available_at falls
// back to the database clock.
func (d Dialect) valuesTuple(offset int) string {
	switch d {
	case Postgres:
		p := make([]string, 8)
		for i := range p {
			p[i] = fmt.Sprintf("$%d", offset+i+1)
		}
		return fmt.Sprintf("(%s, COALESCE(%s::timestamptz, now()))", strings.Join(p[:7], ", "), p[7])
	case MySQL:
		return "(?, ?, ?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)))"
	default:
		return "(?, ?, ?, ?, ?, ?, ?, COALESCE(?, " + SQLiteNowMillis + "))"
	}
}

// SQLiteNowMillis is the SQLite expression for the database clock in Unix
// milliseconds, the unit of every SQLite timestamp column.
const SQLiteNowMillis = "CAST(unixepoch('subsec') * 1000 AS INTEGER)"

// timeArg binds available_at: NULL for "now", else the instant in the
// column's representation.
func (d Dialect) timeArg(ev Event) any {
	if ev.AvailableAt.IsZero() {
		return nil
	}
	if d == SQLite {
		return ev.AvailableAt.UnixMilli()
	}
	return ev.AvailableAt.UTC()
}

// payloadArg keeps a nil payload from becoming SQL NULL.
func payloadArg(p []byte) []byte {
	if p == nil {
		return []byte{}
	}
	return p
}

// afterInsert wakes relays in other processes where the database can:
// PostgreSQL delivers the NOTIFY when (and only if) the transaction commits.
func (d Dialect) afterInsert(ctx context.Context, tx *sql.Tx, table string) error {
	if d != Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, "SELECT pg_notify($1, '')", NotifyChannel(table))
	return err
}

// NotifyChannel is the PostgreSQL LISTEN channel for an outbox table.
func NotifyChannel(table string) string { return "herald_" + table }

// DetectDialect asks tx which database it talks to. It uses a query that
// succeeds on MySQL and PostgreSQL and fails harmlessly on SQLite (an error
// does not abort a SQLite transaction).
func DetectDialect(ctx context.Context, tx *sql.Tx) (Dialect, error) {
	var version string
	err := tx.QueryRowContext(ctx, "SELECT version()").Scan(&version)
	if err != nil {
		var sqliteVersion string
		if err2 := tx.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&sqliteVersion); err2 == nil {
			return SQLite, nil
		}
		return 0, fmt.Errorf("herald: cannot tell the database kind: %w", err)
	}
	if strings.Contains(version, "PostgreSQL") {
		return Postgres, nil
	}
	return MySQL, nil
}
