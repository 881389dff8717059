package admin

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// Rule: in a real browser, the overview lists each configured projection
// with its ledger rows by state, a dead event flagged with the command
// that replays it, and for an outbox source the events it has not applied.
func TestDashboardProjectionsInBrowser(t *testing.T) {
	ctx := browser(t)
	bg := context.Background()
	st := openStore(t)
	if err := st.MigrateProjections(bg, store.DefaultProjectionTable); err != nil {
		t.Fatal(err)
	}
	enqueue(t, st, herald.Event{ID: "gift-1", Topic: "t", Type: "GiftSent"}, herald.Event{ID: "gift-2", Topic: "t", Type: "GiftSent"})
	key := func(id string) store.ProjectionKey {
		return store.ProjectionKey{Table: store.DefaultProjectionTable, Projection: "gift_wall", EventID: id}
	}
	for _, id := range []string{"gift-1", "x-1", "x-2"} {
		if _, err := st.Apply(bg, store.ApplyParams{ProjectionKey: key(id), Lease: time.Minute},
			func(*sql.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.Fail(bg, store.ProjectionFailure{ProjectionKey: key("x-3"), Error: "CHECK constraint failed",
		Permanent: true, Event: herald.Event{ID: "x-3", Topic: "t", Type: "GiftSent"}}); err != nil {
		t.Fatal(err)
	}
	stores := []StoreLanes{{Name: DefaultStore, Store: st, Lanes: []relay.Lane{{Name: "main", Table: herald.DefaultTable}},
		Projections: []ProjectionRef{{Name: "gift_wall", Outbox: store.Scope{Table: herald.DefaultTable}}, {Name: "rooms"}}}}
	srv, err := ListenStores("127.0.0.1:0", prometheus.NewRegistry(), stores)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(bg)
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+srv.Addr()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#projections tr[data-projection="gift_wall"]`))); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"done": "3", "dead": "1", "failed": "0", "behind": "1",
		"state": "dead events: herald projection replay gift_wall --dead"}
	for class, w := range want {
		got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`tr[data-projection="gift_wall"] td.`+class)))
		if err != nil || got != w {
			t.Errorf("projection gift_wall shows %s %q (%v); want %q", class, got, err, w)
		}
	}
	behind, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`tr[data-projection="rooms"] td.behind`)))
	if err != nil || behind != "-" {
		t.Errorf("projection rooms (a broker source) shows behind %q (%v); want -", behind, err)
	}
	if cls, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('tr[data-projection="gift_wall"] td.state').className`)); err != nil || !strings.Contains(cls, "some") {
		t.Errorf("projection gift_wall with a dead event has state class %q (%v); want it in red (some)", cls, err)
	}
	if cls, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('tr[data-projection="rooms"] td.state').className`)); err != nil || !strings.Contains(cls, "ok") {
		t.Errorf("projection rooms has state class %q (%v); want ok (green)", cls, err)
	}
	screenshot(t, ctx, "dashboard-projections")
}
