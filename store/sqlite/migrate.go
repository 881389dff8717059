package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// migration is one schema version. Its statements are templates: {{T}} is
// the quoted outbox table, {{N}} its bare name (for index names), {{NOW}}
// the database clock in ms (portableNow).
type migration struct {
	version int
	stmts   []string
}

// uuidExpr is a random UUID-shaped (version 4) id, the default event_id for
// plain INSERTs that do not bring their own.
const uuidExpr = `lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' ||
	substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) ||
	substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`

// portableNow is the database clock in ms for DEFAULT clauses: the
// columns' defaults are evaluated by whichever SQLite a producer's INSERT
// runs on, so they must work from SQLite 3.35 on (unixepoch('subsec') needs
// 3.42). julianday('now') has millisecond precision; ROUND undoes the
// floating-point error of the conversion.
const portableNow = `CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)`

// createOutbox is the outbox table's definition under the name qt.
func createOutbox(qt string) string {
	return `CREATE TABLE IF NOT EXISTS ` + qt + ` (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	event_id      TEXT    NOT NULL UNIQUE DEFAULT (` + uuidExpr + `),
	tenant        TEXT    NOT NULL DEFAULT '',
	topic         TEXT    NOT NULL,
	event_type    TEXT    NOT NULL,
	partition_key TEXT    NOT NULL DEFAULT '',
	headers       TEXT    NOT NULL DEFAULT '{}' CHECK (json_type(headers) = 'object'),
	payload       BLOB    NOT NULL DEFAULT x'',
	created_at    INTEGER NOT NULL DEFAULT ({{NOW}}),
	available_at  INTEGER NOT NULL DEFAULT ({{NOW}}),
	status        TEXT    NOT NULL DEFAULT 'pending'
	              CHECK (status IN ('pending', 'in_flight', 'delivered', 'dead')),
	attempts      INTEGER NOT NULL DEFAULT 0,
	last_error    TEXT    NOT NULL DEFAULT '',
	lease_owner   TEXT    NOT NULL DEFAULT '',
	lease_token   INTEGER NOT NULL DEFAULT 0,
	delivered_at  INTEGER,
	updated_at    INTEGER NOT NULL DEFAULT ({{NOW}}),
	receipt       TEXT    NOT NULL DEFAULT '{}'
)`
}

// outboxIndexes are the outbox table's indexes.
var outboxIndexes = []string{
	// The claim index: ready rows in claim order; available_at is the
	// lease end while in flight, so expired leases are found the same way.
	`CREATE INDEX IF NOT EXISTS "{{N}}_claim" ON {{T}} (available_at, id)
	WHERE status IN ('pending', 'in_flight')`,
	// Ordered lanes: the earlier rows of a key that may block it.
	`CREATE INDEX IF NOT EXISTS "{{N}}_key" ON {{T}} (partition_key, tenant, id)
	WHERE status IN ('pending', 'in_flight', 'dead')`,
	// Cleanup and dead-letter tooling: finished rows by age.
	`CREATE INDEX IF NOT EXISTS "{{N}}_done" ON {{T}} (status, updated_at)
	WHERE status IN ('delivered', 'dead')`,
}

// outboxMigrations create and upgrade an outbox table. Append only: a
// released version never changes.
var outboxMigrations = []migration{{
	version: 1,
	stmts: []string{
		createOutbox("{{T}}"),
		outboxIndexes[0], outboxIndexes[1], outboxIndexes[2],
	},
}, {
	// Version 2 rebuilds tables made by version 1 before its DEFAULTs
	// became portable: they used unixepoch('subsec') (SQLite 3.42), so a
	// plain INSERT from an older SQLite (Debian 12's 3.40, many Pythons)
	// failed on created_at. SQLite cannot change a column's DEFAULT, hence
	// the copy; it keeps ids and the AUTOINCREMENT high-water mark (ids are
	// never reused) and runs under the migration's write lock.
	version: 2,
	stmts: []string{
		`DROP TABLE IF EXISTS "{{N}}_v2"`,
		createOutbox(`"{{N}}_v2"`),
		`INSERT INTO "{{N}}_v2" SELECT * FROM {{T}}`,
		`DELETE FROM sqlite_sequence WHERE name = '{{N}}_v2'`,
		`INSERT INTO sqlite_sequence (name, seq) SELECT '{{N}}_v2', seq FROM sqlite_sequence WHERE name = '{{N}}'`,
		`DROP TABLE {{T}}`,
		`ALTER TABLE "{{N}}_v2" RENAME TO {{T}}`,
		outboxIndexes[0], outboxIndexes[1], outboxIndexes[2],
	},
}, {
	// Version 3 keeps the errors of the last failed attempts
	// (store.Record.Errors; the failure marks append to it). NULL until a
	// row first fails. Adding a nullable column without a default only
	// changes the schema, no row is rewritten; it runs in the migration's
	// transaction with its version record, so a crash leaves neither.
	version: 3,
	stmts:   []string{`ALTER TABLE {{T}} ADD COLUMN attempt_errors TEXT`},
}}

// lockMigrations create Herald's own tables, recorded under lockTable.
var lockMigrations = []migration{{
	version: 1,
	stmts: []string{`CREATE TABLE IF NOT EXISTS herald_locks (
	name  TEXT PRIMARY KEY,
	until INTEGER NOT NULL
)`},
}, {
	// Lanes' shared state: operator pauses and brokers' reported state.
	version: 2,
	stmts: []string{`CREATE TABLE IF NOT EXISTS herald_lane_state (
	lane         TEXT    PRIMARY KEY,
	paused       INTEGER NOT NULL DEFAULT 0,
	paused_at    INTEGER,
	broker       TEXT    NOT NULL DEFAULT '',
	broker_up    INTEGER NOT NULL DEFAULT 1,
	broker_since INTEGER,
	broker_error TEXT    NOT NULL DEFAULT '',
	broker_node  TEXT    NOT NULL DEFAULT ''
)`},
}, {
	// Replay history (store.QueryReplayer): one row per event per replay.
	version: 3,
	stmts: []string{`CREATE TABLE IF NOT EXISTS herald_replays (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	table_name  TEXT    NOT NULL,
	event_id    TEXT    NOT NULL,
	row_id      INTEGER NOT NULL,
	from_status TEXT    NOT NULL,
	replayed_at INTEGER NOT NULL,
	replayed_by TEXT    NOT NULL DEFAULT '',
	reason      TEXT    NOT NULL DEFAULT ''
)`, `CREATE INDEX IF NOT EXISTS herald_replays_event ON herald_replays (table_name, event_id, id)`},
}}

const lockTable = "herald_locks"

// Migrate creates or upgrades table and herald_locks to the latest version.
// It runs in one BEGIN IMMEDIATE transaction, so concurrent callers (other
// processes included) queue on SQLite's write lock and the later ones find
// the work done.
//
// On a mapped table (MapTable) it creates only Herald's own tables, and
// checks the mapped one against its mapping (CheckTable): Herald never
// creates or changes a table it did not make.
func (s *Store) Migrate(ctx context.Context, table string) error {
	qt, err := quote(table)
	if err != nil {
		return err
	}
	mapped := s.mapped.Get(table)
	err = s.write(ctx, func() error {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("sqlite: migrate %s: %w", table, err)
		}
		defer conn.Close()
		// BEGIN IMMEDIATE by hand, whatever the pool's _txlock: the
		// version check and the DDL must happen under the write lock.
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return fmt.Errorf("sqlite: migrate %s: %w", table, err)
		}
		if err := migrateLocked(ctx, conn, table, qt, mapped == nil); err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			return fmt.Errorf("sqlite: migrate %s: %w", table, err)
		}
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			return fmt.Errorf("sqlite: migrate %s: %w", table, err)
		}
		return nil
	})
	if err != nil || mapped == nil {
		return err
	}
	return mapped.Check(ctx)
}

// migrateLocked migrates Herald's own tables, and table too when outbox
// is set.
func migrateLocked(ctx context.Context, conn *sql.Conn, table, qt string, outbox bool) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS herald_migrations (
	table_name TEXT    NOT NULL,
	version    INTEGER NOT NULL,
	applied_at INTEGER NOT NULL DEFAULT (`+portableNow+`),
	PRIMARY KEY (table_name, version)
)`); err != nil {
		return err
	}
	if err := apply(ctx, conn, lockTable, `"`+lockTable+`"`, lockMigrations); err != nil || !outbox {
		return err
	}
	// A table dropped by hand is made again, not found up to date.
	if _, err := conn.ExecContext(ctx, `DELETE FROM herald_migrations WHERE table_name = ? AND NOT EXISTS
	(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?)`, table, table); err != nil {
		return err
	}
	return apply(ctx, conn, table, qt, outboxMigrations)
}

// apply runs the migrations of ms newer than table's recorded version.
func apply(ctx context.Context, conn *sql.Conn, table, qt string, ms []migration) error {
	var current int
	err := conn.QueryRowContext(ctx,
		`SELECT COALESCE(MAX(version), 0) FROM herald_migrations WHERE table_name = ?`, table).Scan(&current)
	if err != nil {
		return err
	}
	r := strings.NewReplacer("{{T}}", qt, "{{N}}", table, "{{NOW}}", portableNow)
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		for _, stmt := range m.stmts {
			if _, err := conn.ExecContext(ctx, r.Replace(stmt)); err != nil {
				return fmt.Errorf("version %d: %w", m.version, err)
			}
		}
		if _, err := conn.ExecContext(ctx,
			`INSERT INTO herald_migrations (table_name, version) VALUES (?, ?)`, table, m.version); err != nil {
			return fmt.Errorf("version %d: %w", m.version, err)
		}
	}
	return nil
}
