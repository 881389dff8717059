package admin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// deliverAfterAFailure delivers the one pending row of st's default table
// on its second attempt, so that it keeps the first attempt's error.
func deliverAfterAFailure(t *testing.T, st store.Store, msg string) {
	t.Helper()
	bg := context.Background()
	claim := func(token int64) int64 {
		recs, err := st.Claim(bg, store.ClaimParams{Scope: store.Scope{Table: herald.DefaultTable}, Owner: "w", Token: token,
			Lease: time.Minute, Limit: 1})
		if err != nil || len(recs) != 1 {
			t.Fatalf("claim: %d rows, %v", len(recs), err)
		}
		return recs[0].ID
	}
	id := claim(11)
	if _, err := st.Retry(bg, store.Fence{Table: herald.DefaultTable, Token: 11}, []store.Failure{{ID: id, Error: msg}}); err != nil {
		t.Fatal(err)
	}
	id = claim(12)
	if _, err := st.Complete(bg, store.Fence{Table: herald.DefaultTable, Token: 12}, []store.Delivery{{ID: id}}); err != nil {
		t.Fatal(err)
	}
}

// Rule: in a real browser, the dashboard reads at a glance: a broker's
// outage shows its error text and how long ago it began; times are
// relative with the absolute time, zone named, on hover; a delivered
// event shows no error in its row and says on its page that the error
// was an earlier attempt's; hidden headers say how many there are; a
// purge from the event page returns to the lane saying so, and a purged
// event's page says it is gone, not that Herald cannot be reached.
func TestDashboardReadsAtAGlanceInBrowser(t *testing.T) {
	ctx := browser(t)
	bg := context.Background()
	st := openStore(t)
	enqueue(t, st, herald.Event{ID: "hdr-1", Topic: "t", Type: "Signed", Headers: map[string]string{"x-a": "1", "x-b": "2"}})
	killFirst(t, st, 1, "schema mismatch")
	enqueue(t, st, herald.Event{ID: "ok-1", Topic: "t", Type: "Paid"})
	deliverAfterAFailure(t, st, "timeout waiting for ack")
	if err := st.SetBrokerState(bg, []string{"main"}, store.BrokerReport{Broker: "nats", Up: false,
		Error: "nats: no servers available for connection", Node: "n1"}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, st, herald.Event{ID: "bad-headers", Topic: "t", Type: "Paid"})
	if _, err := st.DB().Exec(`UPDATE herald_outbox SET headers = '{"x-n": 5}' WHERE event_id = 'bad-headers'`); err != nil {
		t.Fatal(err)
	}
	srv, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), st, []relay.Lane{{Name: "main", Table: herald.DefaultTable}},
		WithToken("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(bg)
	base := "http://" + srv.Addr()
	text := texter(t, ctx)
	attr := func(sel, name string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(`+"`"+sel+"`"+`).getAttribute("`+name+`")`))
		if err != nil {
			t.Fatalf("%s of %s: %v", name, sel, err)
		}
		return v
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#lanes tr[data-lane="main"]`))); err != nil {
		t.Fatal(err)
	}
	if s := text(`tr[data-lane="main"] td.state`); !strings.Contains(s, "nats: no servers available for connection") || !strings.Contains(s, "ago") {
		t.Errorf("a broker outage must show its error and how long ago it began: %q", s)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/lanes/main?status=delivered"),
		chromedp.WaitVisible(chromedp.CSS(`#events tr[data-event-id="ok-1"]`))); err != nil {
		t.Fatal(err)
	}
	if e := text(`#events tr[data-event-id="ok-1"] td.error`); e != "" {
		t.Errorf("a delivered row shows the error %q", e)
	}
	zone, err := chromedp.Run(ctx, chromedp.Evaluate[string](`new Date().toLocaleString(undefined, {timeZoneName: "short"}).split(" ").pop()`))
	if err != nil {
		t.Fatal(err)
	}
	if c, title := text(`#events tr[data-event-id="ok-1"] td.created`), attr(`#events tr[data-event-id="ok-1"] td.created`, "title"); !strings.HasSuffix(c, " ago") ||
		!strings.Contains(title, time.Now().Format("2006")) || !strings.HasSuffix(title, " "+zone) {
		t.Errorf("created shows %q, on hover %q; want a relative time, and the absolute one ending in the zone %s", c, title, zone)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/lanes/main/events/ok-1"),
		chromedp.WaitVisible(chromedp.CSS(`#event-fields[data-status="delivered"]`))); err != nil {
		t.Fatal(err)
	}
	if e := text(`#last-error`); !strings.HasPrefix(e, "delivered since") || !strings.Contains(e, "timeout waiting for ack") {
		t.Errorf("a delivered event's page shows its error as %q", e)
	}
	if a := text(`#attempt-errors tbody tr:first-child`); !strings.HasPrefix(a, "1") || !strings.Contains(a, "ago") ||
		!strings.HasSuffix(a, "timeout waiting for ack") {
		t.Errorf("the failed attempt before the delivery shows as %q; want its number, when and its error", a)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/lanes/main/events/bad-headers"),
		chromedp.WaitVisible(chromedp.CSS(`#event-fields[data-status="pending"]`))); err != nil {
		t.Fatal(err)
	}
	if h := text(`#headers tbody`); !strings.Contains(h, "invalid as stored") || !strings.Contains(h, `header "x-n" is a number`) {
		t.Errorf("invalid stored headers show as %q; want why they are invalid", h)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/lanes/main/events/hdr-1"),
		chromedp.WaitVisible(chromedp.CSS(`#event-fields[data-status="dead"]`))); err != nil {
		t.Fatal(err)
	}
	if h := text(`#headers tbody`); h != "hidden (2 headers)" {
		t.Errorf("headers hidden without the token show %q; want hidden (2 headers)", h)
	}
	err = chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#token`), "s3cret"), chromedp.Click(chromedp.CSS(`#token-form button`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#mode").textContent === "actions enabled"`),
		chromedp.Poll[chromedp.Void](`(window.confirm = () => true) && true`))
	if err == nil {
		_, err = chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`#ev-purge`)))
	}
	if err == nil {
		// The purge navigates: wait on the page it leads to.
		err = chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#lane-page`)),
			chromedp.Poll[chromedp.Void](`location.pathname === "/lanes/main" && document.querySelector("#notice").textContent === "event hdr-1 was purged"`))
	}
	if err != nil {
		t.Fatalf("a purge from the event page must return to the lane, saying so: %v", err)
	}
	err = chromedp.Do(ctx, chromedp.Navigate(base+"/lanes/main/events/hdr-1"),
		chromedp.Poll[chromedp.Void](`document.querySelector("#updated").textContent.includes("purged")`))
	if err != nil {
		t.Fatalf("a purged event's page: %v", err)
	}
	if u := text(`#updated`); strings.Contains(u, "cannot reach") {
		t.Errorf("a purged event's page says %q", u)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/lanes/main/events/bad-headers"),
		chromedp.WaitVisible(chromedp.CSS(`#event-fields[data-status="pending"]`))); err != nil {
		t.Fatal(err)
	}
	if h := text(`#headers tbody td.headers-stored`); h != `{"x-n": 5}` {
		t.Errorf("invalid stored headers, with the token, show as %q; want them verbatim", h)
	}
}
