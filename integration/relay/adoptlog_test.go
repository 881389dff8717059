package relay

import (
	"context"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/internal/testenv"
	. "github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/mysql/binlog"
	"github.com/heraldhq/herald/store/postgres"
)

// adoptLogDB is the wallet database named name (adoptDBs) on a server of
// the test's own whose log Herald can read, opened with dsn by open.
func adoptLogDB(t *testing.T, name string) adoptDB {
	t.Helper()
	for _, db := range adoptDBs {
		if db.name != name {
			continue
		}
		switch name {
		case "MariaDB":
			_, dsn := testenv.NewBinlogMariaDB(t)
			db.open = func(tb testing.TB) store.Store {
				s, err := binlog.Open(context.Background(), dsn, mysql.Options{})
				if err != nil {
					tb.Fatal(err)
				}
				return s
			}
		case "PostgreSQL":
			_, dsn := testenv.NewLogicalPostgres(t)
			db.open = func(tb testing.TB) store.Store {
				s, err := postgres.Open(context.Background(), dsn, postgres.Options{})
				if err != nil {
					tb.Fatal(err)
				}
				return s
			}
		}
		return db
	}
	t.Fatalf("no wallet database %s", name)
	return adoptDB{}
}

// Rule: the cut-over of docs/adopt.md on a log lane: Herald's log lane
// starts on a mapped table while the service's own worker still claims
// from it, then the old worker stops. Every row is published and
// delivered; a row is published twice only when the old worker took it
// (it claimed a row the log lane had also read, or held one when it
// stopped, which Herald claims once its lock runs out), and the rows inserted
// after it stopped are published once, by Herald. The rows from before
// the lane's first start go to its polling workers, which share them with
// the old worker by SKIP LOCKED.
func TestAdoptLogCutOverFromOldWorker(t *testing.T) {
	for _, name := range []string{"MariaDB", "PostgreSQL"} {
		t.Run(name, func(t *testing.T) { testAdoptLogCutOver(t, adoptLogDB(t, name)) })
	}
}

func testAdoptLogCutOver(t *testing.T, db adoptDB) {
	w := newWallet(t, db)
	// Herald's own tables, the log lanes' position among them.
	if err := store.MigrateFor(context.Background(), w.store, "herald_outbox", store.TableUse{}); err != nil {
		t.Fatal(err)
	}
	pub := memory.New(memory.Config{})
	ids := w.insert("before", "WalletGiftDebited", walletUsers, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	old := make(chan []string, 1)
	go func() {
		published, err := w.oldWorker(ctx, pub, "wallet-node-1", nil)
		if err != nil {
			t.Errorf("old worker: %v", err)
		}
		old <- published
	}()
	l := w.lane(pub)
	l.Source = SourceLog
	r := w.runRelay(l)
	// Rows committed while the lane takes its first position may be both
	// handed over and streamed (docs/loglanes.md): insert after it.
	waitFor(t, 30*time.Second, "the lane's first position", func() bool {
		var n int
		_ = w.store.DB().QueryRow(w.q("SELECT COUNT(*) FROM herald_log_lanes WHERE lane = 'wallet' AND position > 0")).Scan(&n)
		return n == 1
	})
	ids = append(ids, w.insert("during", "WalletGiftDebited", walletUsers, 200)...)
	cancel()
	byOld := map[string]bool{}
	for _, id := range <-old {
		byOld[id] = true
	}
	// Rows it claimed but had not marked when it stopped are claimed again
	// once its lock runs out: published again even when the log lane had
	// published them already.
	for id, r := range w.rows() {
		if r.status == "delivering" && r.worker == "wallet-node-1" {
			byOld[id] = true
		}
	}
	after := w.insert("after", "WalletGiftDebited", walletUsers, 100)
	ids = append(ids, after...)
	// A row the old worker held when it stopped waits for its 30 s lock.
	waitFor(t, 120*time.Second, "every row delivered", func() bool { return w.countStatus("delivered") == len(ids) })
	r.stop()
	dests := map[string][]string{}
	for _, rec := range pub.Records() {
		dests[rec.Message.Event.ID] = append(dests[rec.Message.Event.ID], rec.Message.Destination)
	}
	twice := 0
	for _, id := range ids {
		switch c := pub.Count(id); {
		case c == 0:
			t.Errorf("%s was never published", id)
		case c > 1 && !byOld[id]:
			t.Errorf("%s published %d times, not taken by the old worker: %v", id, c, dests[id])
		case c > 1:
			twice++
		}
	}
	for _, id := range after {
		if c := pub.Count(id); c != 1 || byOld[id] {
			t.Errorf("%s, inserted after the old worker stopped: published %d times (by the old worker: %v), want once by Herald: %v", id, c, byOld[id], dests[id])
		}
	}
	checkWalletMessage(t, pub, after[0])
	t.Logf("%d rows: %d taken by the old worker, %d of them published twice", len(ids), len(byOld), twice)
	if len(byOld) == 0 {
		t.Errorf("the old worker published nothing: the test did not run both at once")
	}
}
