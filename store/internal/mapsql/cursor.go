package mapsql

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald/store"
)

// A claim reads the due rows of a status in (status, next_attempt) index
// order from the start of the range. On MySQL and MariaDB, under a
// backlog, the front of that range is the entries of rows claimed moments
// ago: InnoDB delete-marks a secondary entry when the row's status changes
// and purges it later, and a locking read at READ COMMITTED takes and
// releases a lock on each entry it walks, so every claim walks over what
// the earlier ones left (Herald's own tables have the same cursor, see
// store/mysql/cursor.go).
//
// So while a status's reads come back full, the next one starts after the
// last row the full one took: (next_attempt, id), the order of the index,
// whose InnoDB entries end with the primary key. A read that comes back
// short, and any read once rescanEvery has passed since the cursor was
// set, starts from the beginning and finds every row the cursor passed
// over (a transaction that committed late, a row another worker held).
// The cursor is used only where that order is the index's: on a dialect
// that asks for it (Dialect.Cursor), epoch_ms times (integers compare as
// stored) and an id column that is the table's whole primary key
// (Table.Check finds out, or the first claim; until then, claims read
// without a cursor).

// position is a row's place in claim order: its due time (epoch ms) and id.
type position struct {
	due int64
	id  string
}

// cursorAt is a status's cursor and until when it may be used.
type cursorAt struct {
	position
	until time.Time
}

// rescanEvery bounds how long claims may go on from a cursor.
const rescanEvery = time.Second

// cursors are a table's cursors, by status and scope.
type cursors struct {
	mu sync.Mutex
	m  map[string]cursorAt
}

// get returns key's cursor, if one may be used.
func (c *cursors) get(key string) (position, bool) {
	if key == "" {
		return position{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.m[key]
	if ok && !time.Now().Before(at.until) {
		delete(c.m, key)
		return position{}, false
	}
	return at.position, ok
}

// advance records where a read ended: after a full one, its last row
// (the furthest by due time, when reads ran side by side); after a short
// one, nothing, so that the next read starts over.
func (c *cursors) advance(key string, full bool, last position) {
	if key == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !full {
		delete(c.m, key)
		return
	}
	if c.m == nil {
		c.m = map[string]cursorAt{}
	}
	at := c.m[key]
	if at.until.IsZero() {
		at.until = time.Now().Add(rescanEvery)
	}
	if last.due >= at.due {
		at.position = last
	}
	c.m[key] = at
}

// cursorKey is the key of the cursor for reads of status in scope, or ""
// when such reads go without one.
func (t *Table) cursorKey(status string, scope store.Scope) string {
	if !t.ordersByID.Load() || status == t.m.Statuses.InFlight {
		return ""
	}
	return rangeKey(status, scope)
}

// rangeKey names the reads of status in scope, for the state claims keep
// per read (cursors, quiet values).
func rangeKey(status string, scope store.Scope) string { return status + "\x00" + fmt.Sprint(scope) }

// learnTable runs learn once, before a table's first claim that Check has
// not preceded; if the database does not answer, claims go on without and
// the next one asks again.
func (t *Table) learnTable(ctx context.Context) {
	if !t.tableLearned.Load() {
		_ = t.learn(ctx)
	}
}

// learn reads what claims need to know of the table (learnIDKey, then
// checkCursor, which uses what it learned, learnOwnerWidth, learnChecks).
func (t *Table) learn(ctx context.Context) error {
	for _, step := range []func(context.Context) error{t.learnIDKey, t.checkCursor, t.learnOwnerWidth, t.learnChecks} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	t.tableLearned.Store(true)
	return nil
}

// checkCursor turns the cursor on when the dialect asks for one, times
// are epoch_ms, and the id column is the table's whole primary key (as
// learnIDKey found it).
func (t *Table) checkCursor(ctx context.Context) error {
	d := t.ts.d
	if !d.Cursor || t.m.TimeUnit != store.TimeEpochMillis {
		return nil
	}
	t.ordersByID.Store(t.idPrimary.Load())
	ixs, err := t.ts.readIndexes(ctx, t.name)
	if err != nil {
		return fmt.Errorf("%s: check table %s: indexes: %w", d.Name, t.name, err)
	}
	t.claimIndex.Store(dueIndex(ixs, t.m.Columns))
	return nil
}

// dueIndex names the first index that starts with (status, next_attempt),
// "" when there is none. Claims force it on MySQL/MariaDB: left alone, the
// optimizer reads such an index by status alone ("ref") and filters the
// rest, walking every entry of the status from its start, so a cursor
// saves nothing; forced, the cursor's condition is an index range.
func dueIndex(ixs []store.IndexInfo, c store.Columns) string {
	for _, ix := range ixs {
		if len(ix.Columns) >= 2 && ix.Columns[0] == strings.ToLower(c.Status) &&
			ix.Columns[1] == strings.ToLower(c.NextAttempt) {
			return ix.Name
		}
	}
	return ""
}
