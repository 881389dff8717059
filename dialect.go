package herald

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/heraldhq/herald/store/enqueuesql"
)

// Dialect is the kind of database an outbox lives in. This package holds no
// SQL: the INSERT that enqueues (the public table contract, docs/sql.md) is
// in store/enqueuesql, a leaf package that the root and the stores import.
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

// enqueueSQL is the database's enqueue SQL (package store/enqueuesql).
func (d Dialect) enqueueSQL() enqueuesql.Database {
	switch d {
	case MySQL:
		return enqueuesql.MySQL()
	case Postgres:
		return enqueuesql.Postgres()
	}
	return enqueuesql.SQLite()
}

// SQLiteNowMillis is the SQLite expression for the database clock in Unix
// milliseconds, the unit of every SQLite timestamp column.
const SQLiteNowMillis = enqueuesql.SQLiteNowMillis

// NotifyChannel is the PostgreSQL LISTEN channel for an outbox table.
func NotifyChannel(table string) string { return "herald_" + table }

// DetectDialect asks tx which database it talks to (enqueuesql.Detect).
func DetectDialect(ctx context.Context, tx *sql.Tx) (Dialect, error) {
	name, err := enqueuesql.Detect(ctx, tx)
	if err != nil {
		return 0, fmt.Errorf("herald: cannot tell the database kind: %w", err)
	}
	return ParseDialect(name)
}
