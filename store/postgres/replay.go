package postgres

import (
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/replaysql"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

var _ store.Replaying = (*Store)(nil)

// replays is replay by query in PostgreSQL's SQL; a batch locks its rows
// FOR UPDATE until it commits.
func (s *Store) replays() replaysql.Replayer {
	return replaysql.Replayer{Name: "postgres store", DB: s.db, Quote: quote, Now: "now()", Bind: sqlbuild.Rebind,
		TimeArg: func(t time.Time) any { return t.UTC() },
		Columns: sqlscan.RecordColumns("") + ", now()", Scan: sqlscan.ScanRecords,
		Lock: " FOR UPDATE", InTx: s.inTx, Exec: s.exec,
	}
}

// Replays is the store's search and replay by query, with its history.
func (s *Store) Replays() store.QueryReplayer { return s.mapped.Replays(s.replays()) }
