// Package legacyenqueue serves the deprecated herald.Enqueue, which takes a
// bare *sql.Tx and must find out which database it talks to. It knows the
// three databases Herald first shipped with, and gives their enqueue
// pieces in the shape of herald.Dialect. Everything else takes the store
// package's own Dialect (sqlite.Dialect, mysql.Dialect, postgres.Dialect),
// which are the truth: a test checks that these pieces
// build the same statements (legacyenqueue_test). It is frozen: a new database is not added
// here (its users call Outbox.Enqueue with its Dialect). It imports nothing
// of Herald, so that the root package can import it.
package legacyenqueue

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"
)

// Pieces are one database's enqueue pieces, field for field those of
// herald.Dialect.
type Pieces struct {
	Name        string
	Quote       func(table string) string
	Placeholder func(n int) string
	TimeParam   func(param string) string
	Now         string
	Time        func(time.Time) any
	OnConflict  string
	AfterInsert func(ctx context.Context, ex Execer, table string) error
}

// Execer is herald.Execer's shape.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func doubleQuoted(table string) string { return `"` + table + `"` }

func question(int) string { return "?" }

func utc(t time.Time) any { return t.UTC() }

// byName are the pieces of each database.
var byName = map[string]Pieces{
	"sqlite": {Name: "sqlite", Quote: doubleQuoted, Placeholder: question,
		Now: "CAST(unixepoch('subsec') * 1000 AS INTEGER)", Time: func(t time.Time) any { return t.UnixMilli() },
		OnConflict: " ON CONFLICT (event_id) DO NOTHING"},
	"mysql": {Name: "mysql", Quote: func(t string) string { return "`" + t + "`" }, Placeholder: question,
		Now: "UTC_TIMESTAMP(6)", Time: utc, OnConflict: " ON DUPLICATE KEY UPDATE event_id = event_id"},
	"postgres": {Name: "postgres", Quote: doubleQuoted, Placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
		TimeParam: func(p string) string { return p + "::timestamptz" }, Now: "now()", Time: utc,
		OnConflict: " ON CONFLICT (event_id) DO NOTHING", AfterInsert: notify},
}

// Lookup returns the pieces of the database named so, for the test that
// holds them equal to the store packages' own.
func Lookup(name string) (Pieces, bool) {
	p, ok := byName[name]
	return p, ok
}

// notify wakes PostgreSQL relays of table on commit.
func notify(ctx context.Context, ex Execer, table string) error {
	_, err := ex.ExecContext(ctx, "SELECT pg_notify($1, '')", "herald_"+table)
	return err
}

// Detect asks tx which database it talks to and returns its pieces. It uses
// a query that succeeds on MySQL and PostgreSQL and fails harmlessly on
// SQLite (an error does not abort a SQLite transaction).
func Detect(ctx context.Context, tx *sql.Tx) (Pieces, error) {
	var version string
	err := tx.QueryRowContext(ctx, "SELECT version()").Scan(&version)
	if err != nil {
		var sqliteVersion string
		if err2 := tx.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&sqliteVersion); err2 == nil {
			return byName["sqlite"], nil
		}
		return Pieces{}, err
	}
	if strings.Contains(version, "PostgreSQL") {
		return byName["postgres"], nil
	}
	return byName["mysql"], nil
}
