package postgres

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// A projection table fills from empty fast (an outbox scan applies
// thousands of events a second), and autovacuum analyzes it only after its
// naptime (a minute by default). Until then the planner believes it holds a
// row or two, and the outbox scan's anti-join on it ran as a nested loop
// that compared every outbox row with every finished one: 60 events/s on a
// 20,000-event outbox against 1,600–2,000 once the table was analyzed. So
// before a scan the store analyzes the table itself when its statistics
// lag behind what was written since: at most once per freshenEvery per
// table, one catalog read otherwise.

// freshenEvery is how often one table's statistics are checked.
const freshenEvery = 10 * time.Second

// statsFreshener analyzes tables whose planner statistics are stale.
type statsFreshener struct {
	db      *sql.DB
	mu      sync.Mutex
	checked map[string]time.Time // quoted table → last check
}

func newStatsFreshener(db *sql.DB) *statsFreshener {
	return &statsFreshener{db: db, checked: map[string]time.Time{}}
}

// freshen analyzes table (quoted) if it was never analyzed and holds rows,
// or if more rows changed since its last analysis than a fifth of what it
// held then (at least 1,000). Errors are ignored: the statistics only
// speed the scan up, and autovacuum gets there too.
func (f *statsFreshener) freshen(ctx context.Context, table string) {
	if !f.due(table) {
		return
	}
	var mods, tuples float64
	err := f.db.QueryRowContext(ctx, `SELECT COALESCE(s.n_mod_since_analyze, 0), c.reltuples
FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.oid = to_regclass($1)`, table).Scan(&mods, &tuples)
	if err != nil || !stale(mods, tuples) {
		return
	}
	_, _ = f.db.ExecContext(ctx, "ANALYZE "+table)
}

// stale says whether statistics taken when the table held tuples rows
// (negative: never) are stale after mods changes.
func stale(mods, tuples float64) bool {
	if tuples < 0 {
		return mods > 100
	}
	return mods > max(1000, tuples/5)
}

// due reports whether table's last check is older than freshenEvery, and
// notes this one.
func (f *statsFreshener) due(table string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.checked[table]) < freshenEvery {
		return false
	}
	f.checked[table] = time.Now()
	return true
}
