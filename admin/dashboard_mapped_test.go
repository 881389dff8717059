package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/sqlite"
)

// mappedDBs open the three stores for the dashboard's mapped-lane test.
var mappedDBs = []struct {
	name, quote string
	open        func(t *testing.T) store.Store
}{
	{"SQLite", `"`, func(t *testing.T) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"MariaDB", "`", func(t *testing.T) store.Store {
		s, err := mysql.Open(context.Background(), testenv.MySQLDSN(), mysql.Options{})
		if err != nil {
			testenv.Unreachable(t, "MySQL/MariaDB", err)
		}
		return s
	}},
	{"PostgreSQL", `"`, func(t *testing.T) store.Store {
		s, err := postgres.Open(context.Background(), testenv.PostgresDSN(), postgres.Options{})
		if err != nil {
			testenv.Unreachable(t, "PostgreSQL", err)
		}
		return s
	}},
}

// dashWallet is how the test's lane reads its outbox table.
var dashWallet = store.Mapping{
	Columns: store.Columns{ID: "event_id", Type: "event_type", Key: "user_id", Payload: "payload_json",
		CreatedAt: "created_at_ms", Status: "status", Attempts: "retry_count", NextAttempt: "next_retry_at_ms",
		LeaseUntil: "lock_until_ms", LeaseOwner: "worker_id", LastError: "last_error", Receipt: "receipt_json"},
	Statuses: store.Statuses{Pending: store.StatusValues{"pending", "retryable"}, InFlight: "delivering",
		Delivered: "delivered", Dead: "dead"},
	TimeUnit: store.TimeEpochMillis,
}

// mappedLane makes a mapped outbox table in st with 60 dead rows
// (dead-00 … dead-59) and returns the lane that reads it.
func mappedLane(t *testing.T, st store.Store, quote string) relay.Lane {
	t.Helper()
	table := testenv.Name("dash_outbox")
	qt := quote + table + quote
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := st.DB().Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`CREATE TABLE ` + qt + ` (event_id VARCHAR(64) NOT NULL PRIMARY KEY, event_type VARCHAR(64) NOT NULL,
  user_id BIGINT NOT NULL, payload_json TEXT NOT NULL, created_at_ms BIGINT NOT NULL, status VARCHAR(16) NOT NULL,
  retry_count INT NOT NULL DEFAULT 0, next_retry_at_ms BIGINT NOT NULL DEFAULT 0, lock_until_ms BIGINT NOT NULL DEFAULT 0,
  worker_id VARCHAR(128) NOT NULL DEFAULT '', last_error VARCHAR(1024) NOT NULL DEFAULT '', receipt_json VARCHAR(512) NULL)`)
	t.Cleanup(func() { _, _ = st.DB().Exec("DROP TABLE " + qt) })
	var vals []string
	for i := range 60 {
		vals = append(vals, fmt.Sprintf(`('dead-%02d', 'GiftSent', %d, '{"n":%d}', %d, 'dead', 3, 0, 0, 'old-worker', 'broker said no')`,
			i, 1000+i%3, i, 1764900000000+int64(i)))
	}
	exec(`INSERT INTO ` + qt + ` (event_id, event_type, user_id, payload_json, created_at_ms, status, retry_count,
  next_retry_at_ms, lock_until_ms, worker_id, last_error) VALUES ` + strings.Join(vals, ", "))
	if err := store.MapTable(st, table, dashWallet); err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(context.Background(), table); err != nil {
		t.Fatal(err)
	}
	return relay.Lane{Name: "wallet", Table: table, Columns: dashWallet.Columns, Statuses: dashWallet.Statuses,
		TimeUnit: dashWallet.TimeUnit}
}

// Rule: on a lane that reads a mapped table the dashboard works as on
// Herald's own tables: the dead letters page through all the dead rows
// (newest event id first, 50 a page, no row twice), the API's dead list
// pages likewise, and an event's page shows its fields and error and
// replays it, the replay in its history.
func TestAdoptDashboardMappedLane(t *testing.T) {
	for _, db := range mappedDBs {
		t.Run(db.name, func(t *testing.T) {
			st := db.open(t)
			t.Cleanup(func() { st.Close() })
			testDashboardMapped(t, st, mappedLane(t, st, db.quote))
		})
	}
}

func testDashboardMapped(t *testing.T, st store.Store, lane relay.Lane) {
	bg := context.Background()
	srv, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), st, []relay.Lane{lane}, WithToken("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(bg)
	base := "http://" + srv.Addr()
	checkDeadAPIPages(t, base)

	ctx := browser(t)
	text := texter(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/lanes/wallet?status=dead"),
		chromedp.WaitVisible(chromedp.CSS(`#events tr[data-event-id="dead-59"]`))); err != nil {
		t.Fatal(err)
	}
	if p := text(`#page-of`); !strings.Contains(p, "60 event(s) match · page 1 of 2") {
		t.Errorf("page line %q", p)
	}
	rows := func() []string {
		t.Helper()
		ids, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#events tbody tr[data-event-id]")].map((r) => r.dataset.eventId)`))
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	first := rows()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#next-page`)),
		chromedp.WaitVisible(chromedp.CSS(`#events tr[data-event-id="dead-00"]`))); err != nil {
		t.Fatalf("the next page of a mapped lane's dead letters: %v", err)
	}
	second := rows()
	if len(first) != 50 || first[0] != "dead-59" || first[49] != "dead-10" || len(second) != 10 || second[0] != "dead-09" {
		t.Errorf("pages of dead letters: %v then %v; want dead-59…dead-10 then dead-09…dead-00", first, second)
	}

	err = chromedp.Do(ctx, chromedp.Navigate(base+"/lanes/wallet/events/dead-07"),
		chromedp.WaitVisible(chromedp.CSS(`#event-fields[data-status="dead"]`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), "s3cret"), chromedp.Click(chromedp.CSS(`#token-form button`)),
		chromedp.WaitVisible(chromedp.CSS(`#payload`)))
	if err != nil {
		t.Fatalf("the event page of a mapped row: %v", err)
	}
	if f, e, p := text(`#event-fields`), text(`#last-error`), text(`#payload`); !strings.Contains(f, "GiftSent") ||
		!strings.Contains(f, "1001") || !strings.Contains(f, "old-worker") || e != "broker said no" || !strings.Contains(p, `"n": 7`) {
		t.Errorf("event page: fields %q, error %q, payload %q", f, e, p)
	}
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#ev-replay`)),
		chromedp.WaitVisible(chromedp.CSS(`#event-fields[data-status="pending"]`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#replays").textContent.includes("dashboard from 127.0.0.1")`))
	if err != nil {
		t.Fatalf("replay from a mapped row's page: %v", err)
	}
	if r, err := st.Get(bg, lane.Table, "dead-07"); err != nil || r.Status != store.StatusPending || r.Attempts != 0 || r.Receipt.Replay != 1 {
		t.Errorf("dead-07 after its replay: %s, %d attempts, receipt %+v (%v); want pending, 0, replay 1", r.Status, r.Attempts, r.Receipt, err)
	}
}

// checkDeadAPIPages pages GET /api/lanes/wallet/dead 25 at a time and
// wants each of the 60 dead rows once, in event id order.
func checkDeadAPIPages(t *testing.T, base string) {
	t.Helper()
	var seen []string
	after := int64(0)
	for range 5 {
		resp, err := http.Get(fmt.Sprintf("%s/api/lanes/wallet/dead?limit=25&after=%d", base, after))
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Dead []struct {
				EventID string `json:"event_id"`
			} `json:"dead"`
			NextAfter int64 `json:"next_after"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page.Dead {
			seen = append(seen, d.EventID)
		}
		if after = page.NextAfter; after == 0 {
			break
		}
	}
	if len(seen) != 60 || seen[0] != "dead-00" || seen[59] != "dead-59" {
		t.Errorf("the dead list API paged %d rows (%v … ); want dead-00 … dead-59 once each", len(seen), seen[:min(3, len(seen))])
	}
}
