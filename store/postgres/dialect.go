package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/heraldhq/herald"
)

// Dialect is PostgreSQL's enqueue SQL, for herald.OutboxConfig: "$n"
// parameters, timestamptz times, ON CONFLICT to skip an id already there,
// and a NOTIFY on NotifyChannel(table) that wakes relays in other
// processes when the transaction commits.
var Dialect = herald.Dialect{
	Name:        "postgres",
	Quote:       func(table string) string { return `"` + table + `"` },
	Placeholder: func(n int) string { return "$" + strconv.Itoa(n) },
	TimeParam:   func(p string) string { return p + "::timestamptz" },
	Now:         "now()",
	Time:        func(t time.Time) any { return t.UTC() },
	OnConflict:  " ON CONFLICT (event_id) DO NOTHING",
	AfterInsert: notify,
}

// NotifyChannel is the LISTEN channel of an outbox table's relays.
func NotifyChannel(table string) string { return "herald_" + table }

// notify wakes the relays of table when the transaction commits.
func notify(ctx context.Context, ex herald.Execer, table string) error {
	_, err := ex.ExecContext(ctx, "SELECT pg_notify($1, '')", NotifyChannel(table))
	return err
}
