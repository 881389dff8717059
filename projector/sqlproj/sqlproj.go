// Package sqlproj runs projections declared in the config file: a
// projection names its source (a broker and destination, or an outbox
// table), its event types and one or more SQL statements with named
// parameters taken from the event, executed in the projector's ledger
// transaction. The entries themselves (YAML keys, validation, the
// statements' parameters) are declared in package projection, which
// package config reads files with.
//
// A statement names event values as :event.id, :event.type,
// :event.tenant, :event.key (the partition key), :event.topic,
// :event.time_ms (Unix milliseconds), :header.NAME and :payload.PATH (a
// dotted path into the JSON payload; array elements by index). A payload
// number is passed as an int64 when integral, else a float64; an object
// or array as its JSON text. A path the event lacks, or a statement that
// fails, is the event's failure: retried, then dead with the reason, never
// skipped.
//
// With `event_from` the event's id, type, tenant, key and time come from
// the message body (JSONPath) or named headers, for messages a producer
// other than Herald published (projector.Config.EventFrom); :event.id and
// the others then name those values.
package sqlproj

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/projection"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/store"
)

// Projection is one entry of `projections` (projection.Projection).
type Projection = projection.Projection

// Source is a projection's `source` (projection.Source).
type Source = projection.Source

// Settings are a projection's projector settings (projector.Settings,
// projection.Settings): an entry's name, table, type filters, workers,
// max_attempts and retry, with their defaults and rules.
type Settings = projection.Settings

// Retry is a projection's `retry` section (projection.Retry, the
// projector's backoff).
type Retry = projection.Retry

// Statement is one configured SQL statement bound to a dialect
// (projection.Statement).
type Statement = projection.Statement

// Compile turns a statement with named parameters into d's SQL
// (projection.Compile).
func Compile(query string, d herald.Dialect) (Statement, error) { return projection.Compile(query, d) }

// Compiled is a projection ready to run on one store: its statements
// checked against the database.
type Compiled struct {
	Projection
	store store.Store
	stmts []Statement
	names []string // "projection NAME: statement I", the prefix of its errors
}

// Prepare compiles p's statements for s's dialect and prepares each one
// against the database, which refuses SQL that does not parse or names a
// missing table or column (SQLite, MySQL/MariaDB and PostgreSQL prepare
// on the server). Errors name the statement's key path under path.
func Prepare(ctx context.Context, p Projection, s store.Store, path string) (*Compiled, error) {
	c := &Compiled{Projection: p, store: s}
	for i, q := range p.Statements {
		st, err := Compile(q, s.Dialect())
		if err == nil {
			err = prepare(ctx, s.DB(), st.SQL)
		}
		if err != nil {
			return nil, fmt.Errorf("%s.statements[%d]: %w", path, i, err)
		}
		c.stmts = append(c.stmts, st)
		c.names = append(c.names, fmt.Sprintf("projection %s: statement %d", p.Name, i))
	}
	return c, nil
}

// ErrPrepare wraps a statement the database refused to prepare.
var ErrPrepare = errors.New("the database refused the statement")

func prepare(ctx context.Context, db *sql.DB, q string) error {
	ps, err := db.PrepareContext(ctx, q)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrPrepare, err)
	}
	return ps.Close()
}

// Handler runs the statements for one event in the ledger's transaction.
func (c *Compiled) Handler(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
	ss, err := c.Statements(ev)
	if err != nil {
		return err
	}
	for _, st := range ss {
		if _, err := tx.ExecContext(ctx, st.SQL, st.Args...); err != nil {
			return fmt.Errorf("%s: %w", st.Name, err)
		}
	}
	return nil
}

// Statements returns the statements for one event with their arguments:
// what Handler runs, for a store that sends a batch's statements at once
// (projector.Config.Statements). A parameter the event lacks is an error
// naming the statement.
func (c *Compiled) Statements(ev herald.Event) ([]store.Stmt, error) {
	out := make([]store.Stmt, len(c.stmts))
	for i, st := range c.stmts {
		args, err := st.Args(ev)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.names[i], err)
		}
		out[i] = store.Stmt{SQL: st.SQL, Args: args, Name: c.names[i]}
	}
	return out, nil
}

// Projector returns the projector of c on the store it was prepared on.
func (c *Compiled) Projector(log *slog.Logger) (*projector.Projector, error) {
	return projector.New(projector.Config{Settings: c.Settings, Store: c.store, Handler: c.Handler,
		Statements: c.Statements, Logger: log})
}
