package mysql

import (
	"time"

	"github.com/heraldhq/herald"
)

// Dialect is MySQL's and MariaDB's enqueue SQL, for herald.OutboxConfig:
// "?" parameters, UTC DATETIME(6) times, ON DUPLICATE KEY to skip an id
// already there (INSERT IGNORE would also hide other errors).
var Dialect = herald.Dialect{
	Name:        "mysql",
	Quote:       func(table string) string { return "`" + table + "`" },
	Placeholder: func(int) string { return "?" },
	Now:         "UTC_TIMESTAMP(6)",
	Time:        func(t time.Time) any { return t.UTC() },
	OnConflict:  " ON DUPLICATE KEY UPDATE event_id = event_id",
}
