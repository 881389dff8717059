package herald

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/internal/legacyenqueue"
)

// DefaultTable is the outbox table used when none is named.
const DefaultTable = "herald_outbox"

// DefaultMaxPayload is the payload limit used when none is configured: 1 MiB,
// the default max_payload of a NATS server.
const DefaultMaxPayload = 1 << 20

// Outbox writes events into one outbox table inside the caller's transaction.
// It is safe for concurrent use.
type Outbox struct {
	table      string
	dialect    Dialect
	maxPayload int
	// afterInsertAt is when Enqueue last ran the dialect's AfterInsert
	// (Unix ns): it runs at most every afterInsertEvery.
	afterInsertAt atomic.Int64
}

// afterInsertEvery is the least time between two runs of a dialect's
// AfterInsert by one Outbox. PostgreSQL's NOTIFY serializes the commits of
// every notifying transaction on the server (measured with 16 producers
// committing one 1 KiB row each: 1,500–1,660 commits/s without, 317–365
// with a NOTIFY in each), while a relay that was woken keeps looking by
// itself for a while (relay: activeWindow, 200 ms): one notification per
// 100 ms wakes an idle relay at once and costs a busy producer nothing.
const afterInsertEvery = 100 * time.Millisecond

// OutboxConfig configures an Outbox.
type OutboxConfig struct {
	// Table is the outbox table. Defaults to DefaultTable.
	Table string
	// Dialect is the enqueue SQL of the database the transactions passed to
	// Enqueue talk to: the store package's (sqlite.Dialect, mysql.Dialect,
	// postgres.Dialect). Required.
	Dialect Dialect
	// MaxPayload is the largest payload accepted, in bytes. Defaults to
	// DefaultMaxPayload; negative means no limit.
	MaxPayload int
}

// NewOutbox returns an Outbox for cfg, or an error naming the field at fault.
func NewOutbox(cfg OutboxConfig) (*Outbox, error) {
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if err := ValidateIdentifier(cfg.Table); err != nil {
		return nil, fmt.Errorf("herald: outbox table: %w", err)
	}
	if !cfg.Dialect.valid() {
		return nil, fmt.Errorf("herald: outbox dialect is not set (or incomplete): use the Dialect of your database's store package, e.g. mysql.Dialect")
	}
	if cfg.MaxPayload == 0 {
		cfg.MaxPayload = DefaultMaxPayload
	}
	return &Outbox{table: cfg.Table, dialect: cfg.Dialect, maxPayload: cfg.MaxPayload}, nil
}

// Table returns the outbox table name.
func (o *Outbox) Table() string { return o.table }

// Enqueue writes events in tx: a *sql.Tx (or *sql.Conn inside a
// transaction), or a pgx transaction through postgres.Execer. They become
// visible to relays when tx commits and vanish with it when it rolls back.
// Missing ids are filled in (UUIDv7), and the W3C trace context of ctx, if
// any, is added to each event's headers. An event whose id is already in
// the table is skipped silently.
func (o *Outbox) Enqueue(ctx context.Context, tx Execer, events ...Event) error {
	if len(events) == 0 {
		return nil
	}
	rows, err := o.prepare(ctx, events)
	if err != nil {
		return err
	}
	for start := 0; start < len(rows); start += insertChunk {
		end := min(start+insertChunk, len(rows))
		query, args := o.dialect.insert(o.table, rows[start:end])
		if _, err := tx.ExecContext(ctx, query, args...); err != nil {
			return fmt.Errorf("herald: enqueue into %s: %w", o.table, err)
		}
	}
	if err := o.afterInsert(ctx, tx); err != nil {
		return fmt.Errorf("herald: enqueue into %s: %w", o.table, err)
	}
	signalWakeup(o.table)
	return nil
}

// afterInsert runs the dialect's AfterInsert unless it ran within
// afterInsertEvery.
func (o *Outbox) afterInsert(ctx context.Context, tx Execer) error {
	if o.dialect.AfterInsert == nil {
		return nil
	}
	now := time.Now().UnixNano()
	last := o.afterInsertAt.Load()
	if now-last < int64(afterInsertEvery) || !o.afterInsertAt.CompareAndSwap(last, now) {
		return nil
	}
	return o.dialect.AfterInsert(ctx, tx, o.table)
}

// prepare validates events and turns them into rows ready to bind.
func (o *Outbox) prepare(ctx context.Context, events []Event) ([]row, error) {
	rows := make([]row, len(events))
	for i := range events {
		ev := events[i]
		if ev.ID == "" {
			ev.ID = NewID()
		}
		if err := ev.validate(o.maxPayload); err != nil {
			return nil, err
		}
		ev.Headers = withTraceContext(ctx, ev.Headers)
		headers, err := json.Marshal(nonNilHeaders(ev.Headers))
		if err != nil {
			return nil, fmt.Errorf("%w: event %q: headers: %v", ErrInvalidEvent, ev.ID, err)
		}
		rows[i] = row{id: ev.ID, tenant: ev.Tenant, topic: ev.Topic, typ: ev.Type,
			key: ev.PartitionKey, headers: string(headers), payload: ev.Payload, availableAt: ev.AvailableAt}
	}
	return rows, nil
}

func nonNilHeaders(h map[string]string) map[string]string {
	if h == nil {
		return map[string]string{}
	}
	return h
}

// Enqueue writes events into DefaultTable in tx, finding out with one query
// first which database tx talks to; it knows SQLite, MySQL/MariaDB and
// PostgreSQL.
//
// Deprecated: keep an Outbox made with your store package's Dialect
// (NewOutbox(OutboxConfig{Dialect: mysql.Dialect})) and call its Enqueue,
// which skips that query and works with every database Herald supports.
func Enqueue(ctx context.Context, tx *sql.Tx, events ...Event) error {
	d, err := DetectDialect(ctx, tx)
	if err != nil {
		return err
	}
	o, err := NewOutbox(OutboxConfig{Dialect: d})
	if err != nil {
		return err
	}
	return o.Enqueue(ctx, tx, events...)
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// ValidateIdentifier reports whether name is safe to use as a table name:
// a letter or underscore, then letters, digits or underscores, 63 at most.
// Names from configuration are SQL: they are checked with this, then quoted.
func ValidateIdentifier(name string) error {
	if !identifier.MatchString(name) {
		return fmt.Errorf("%q is not a valid SQL identifier (letters, digits and _, starting with a letter or _, at most 63)", name)
	}
	return nil
}

// DetectDialect asks tx which database it talks to and returns its enqueue
// pieces, for SQLite, MySQL/MariaDB and PostgreSQL.
//
// Deprecated: use the Dialect of your database's store package.
func DetectDialect(ctx context.Context, tx *sql.Tx) (Dialect, error) {
	p, err := legacyenqueue.Detect(ctx, tx)
	if err != nil {
		return Dialect{}, fmt.Errorf("herald: cannot tell the database kind: %w", err)
	}
	d := Dialect{Name: p.Name, Quote: p.Quote, Placeholder: p.Placeholder, TimeParam: p.TimeParam, Now: p.Now,
		Time: p.Time, OnConflict: p.OnConflict}
	if p.AfterInsert != nil {
		d.AfterInsert = func(ctx context.Context, ex Execer, table string) error { return p.AfterInsert(ctx, ex, table) }
	}
	return d, nil
}
