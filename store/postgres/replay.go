package postgres

import (
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlcommon"
)

var _ store.Replaying = (*Store)(nil)

// replays is replay by query in PostgreSQL's SQL; a batch locks its rows
// FOR UPDATE until it commits.
func (s *Store) replays() sqlcommon.Replayer {
	return sqlcommon.Replayer{Name: "postgres store", DB: s.db, Quote: quote, Now: "now()", Bind: sqlcommon.Rebind,
		TimeArg: func(t time.Time) any { return t.UTC() },
		Columns: sqlcommon.RecordColumns("") + ", now()", Scan: sqlcommon.ScanRecords,
		Lock: " FOR UPDATE", InTx: s.inTx, Exec: s.exec,
	}
}

// Replays is the store's search and replay by query, with its history.
func (s *Store) Replays() store.QueryReplayer { return s.replays() }
