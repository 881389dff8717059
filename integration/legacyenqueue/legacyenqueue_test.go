package legacyenqueue_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/legacyenqueue"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/sqlite"
)

// The deprecated herald.Enqueue detects the database and uses these
// pieces; Outbox uses the store package's Dialect. They must build the
// same SQL: every piece, held equal here for the three databases.
func TestPiecesAreTheStoresOwn(t *testing.T) {
	at := time.UnixMilli(1500)
	for _, d := range []herald.Dialect{sqlite.Dialect, mysql.Dialect, postgres.Dialect} {
		p, ok := legacyenqueue.Lookup(d.Name)
		if !ok {
			t.Errorf("%s: no legacy pieces", d.Name)
			continue
		}
		timeParam := func(f func(string) string) string {
			if f == nil {
				return "$8"
			}
			return f("$8")
		}
		if p.Quote("t") != d.Quote("t") || p.Placeholder(3) != d.Placeholder(3) || timeParam(p.TimeParam) != timeParam(d.TimeParam) ||
			p.Now != d.Now || p.OnConflict != d.OnConflict || p.Time(at) != d.Time(at) || (p.AfterInsert == nil) != (d.AfterInsert == nil) {
			t.Errorf("%s: the legacy pieces differ from the store's Dialect", d.Name)
		}
		if d.AfterInsert != nil {
			var legacy, store recorder
			_ = p.AfterInsert(context.Background(), &legacy, "t")
			_ = d.AfterInsert(context.Background(), &store, "t")
			if legacy != store {
				t.Errorf("%s: after the insert the legacy path runs %+v, the store %+v", d.Name, legacy, store)
			}
		}
	}
}

// recorder keeps the statement it is asked to run.
type recorder struct {
	query string
	arg   any
}

func (r *recorder) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	r.query, r.arg = query, args[0]
	return nil, nil
}
