package mysql

import (
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/replaysql"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

var _ store.Replaying = (*Store)(nil)

// replays is replay by query in MySQL's SQL; a batch locks its rows FOR
// UPDATE until it commits.
func (s *Store) replays() replaysql.Replayer {
	return replaysql.Replayer{Name: "mysql store", DB: s.db, Quote: quote, Now: "UTC_TIMESTAMP(6)",
		TimeArg: func(t time.Time) any { return t.UTC() },
		Columns: sqlscan.RecordColumns("") + ", UTC_TIMESTAMP(6)", Scan: sqlscan.ScanRecords,
		Lock: " FOR UPDATE", InTx: s.inTx, Exec: s.exec,
		// delivered_at is computed (schema version 3); see Complete.
		DeliveredAt: "delivered_at_stored",
		// receipt is computed from receipt_padded (schema version 3).
		Receipt: "receipt_padded", ReceiptValue: padReceipt,
	}
}

// Replays is the store's search and replay by query, with its history.
func (s *Store) Replays() store.QueryReplayer { return s.mappedTables().Replays(s.replays()) }
