package relay

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/store"
)

// Rule: header_columns carry a mapped row's columns as message headers (a
// BIGINT as its digits), which {header.NAME} puts in the destination; a
// row that leaves such a placeholder empty goes dead unpublished with the
// reason, and the lane goes on. A header column the table lacks stops the
// lane at start, named, like any mapped column.
func TestAdoptHeaderColumns(t *testing.T) {
	for _, db := range adoptDBs {
		t.Run(db.name, func(t *testing.T) {
			w := newWallet(t, db)
			ids := w.insert("hdr", "WalletGiftDebited", walletUsers, 4)
			blank := w.insert("blank", "WalletGiftDebited", 5000, 1)[0]
			if _, err := w.store.DB().Exec(w.q(`UPDATE {{T}} SET asset_type = '' WHERE event_id = ?`), blank); err != nil {
				t.Fatal(err)
			}
			pub := memory.New(memory.Config{})
			l := w.lane(pub)
			l.HeaderColumns = map[string]string{"asset": "asset_type", "tx": "transaction_id", "user": "user_id"}
			l.Destination = broker.MustParseTemplate("wallet.{header.asset}")
			r := w.runRelay(l)
			waitFor(t, 60*time.Second, "every row finished", func() bool {
				return w.countStatus("delivered") == len(ids) && w.countStatus("dead") == 1
			})
			r.stop()
			recs := pub.Records()
			if len(recs) != len(ids) {
				t.Fatalf("%d messages, want %d", len(recs), len(ids))
			}
			for _, rec := range recs {
				m := rec.Message
				if id := m.Event.ID; m.Destination != "wallet.GOLD" || rec.Headers["tx"] != "tx-"+id ||
					rec.Headers["asset"] != "GOLD" || rec.Headers["user"] != m.Event.PartitionKey {
					t.Errorf("%s: destination %q headers %v", id, m.Destination, rec.Headers)
				}
			}
			if row := w.rows()[blank]; !strings.Contains(row.lastError, "row has an empty header.asset, which the lane's destination needs") {
				t.Errorf("the row without an asset: %+v", row)
			}

			bad := newWallet(t, db)
			m := walletMapping
			m.HeaderColumns = map[string]string{"note": "no_such_column"}
			if err := store.MapTable(bad.store, bad.table, m); err != nil {
				t.Fatal(err)
			}
			err := bad.store.Migrate(context.Background(), bad.table)
			if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), "lacks column no_such_column") {
				t.Errorf("a header column the table lacks: %v; want a schema error naming it", err)
			}
		})
	}
}
