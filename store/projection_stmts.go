package store

import "context"

// Stmt is one SQL statement in the store's dialect with its arguments: a
// handler that only runs statements can hand them to ApplyStatements
// instead of running them itself.
type Stmt struct {
	SQL  string
	Args []any
	// Name, when set, prefixes the statement's error ("projection gifts:
	// statement 0"), as the handler running it would have.
	Name string
}

// StatementApplier is implemented by a ProjectionStore that can apply a
// batch whose handlers are plain statements without waiting for each
// statement's answer (PostgreSQL through pgx sends a batch of new events —
// BEGIN, the ledger rows, every statement, COMMIT — in one round trip).
type StatementApplier interface {
	// ApplyStatements is ApplyBatch with handlers given as statements:
	// stmts(i) returns event i's, in order, or an error that is event i's
	// handler failure. The contract is ApplyBatch's: in order, one
	// transaction, stopping at the first failure (a statement the server
	// refuses, or stmts' error), whose item is reported HandlerFailed with
	// the error in Err, the items before it committed and those after it
	// NotRun. An error returned means nothing was committed.
	ApplyStatements(ctx context.Context, ps []ApplyParams, stmts func(i int) ([]Stmt, error)) ([]ApplyResult, error)
}
