package sqlite

import (
	"time"

	"github.com/heraldhq/herald"
)

// NowMillis is the SQLite expression for the database clock in Unix
// milliseconds, the unit of every SQLite timestamp column.
const NowMillis = "CAST(unixepoch('subsec') * 1000 AS INTEGER)"

// Dialect is SQLite's enqueue SQL, for herald.OutboxConfig: "?"
// parameters, times as Unix milliseconds, ON CONFLICT to skip an id
// already there.
var Dialect = herald.Dialect{
	Name:        "sqlite",
	Quote:       func(table string) string { return `"` + table + `"` },
	Placeholder: func(int) string { return "?" },
	Now:         NowMillis,
	Time:        func(t time.Time) any { return t.UnixMilli() },
	OnConflict:  " ON CONFLICT (event_id) DO NOTHING",
}
