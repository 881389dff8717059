package admin

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// box is an element's place on the page, as getBoundingClientRect says.
type box struct{ Left, Right, Top, Bottom, Width float64 }

// boxes measures the elements of sels (CSS selectors) and of the page's
// visible main element ("main").
func boxes(t *testing.T, ctx context.Context, sels ...string) map[string]box {
	t.Helper()
	out := map[string]box{}
	for _, sel := range append(sels, "main:not([hidden])") {
		b, err := chromedp.Run(ctx, chromedp.Evaluate[box](`(() => { const r = document.querySelector(`+"`"+sel+"`"+
			`).getBoundingClientRect(); return {Left: r.left, Right: r.right, Top: r.top, Bottom: r.bottom, Width: r.width}; })()`))
		if err != nil {
			t.Fatalf("measuring %s: %v", sel, err)
		}
		out[sel] = b
	}
	out["main"] = out["main:not([hidden])"]
	return out
}

// Rule: in a real browser 1600 px wide, the dashboard uses the page's
// width: the overview's lists fill it and its projections stand beside the
// search and the rows no lane selects; the lane's event list fills it; the
// event page puts its record beside its errors and history. At 1000 px
// the same parts stack.
func TestDashboardUsesTheWidthInBrowser(t *testing.T) {
	ctx := browser(t)
	bg := context.Background()
	st := openStore(t)
	enqueue(t, st, herald.Event{ID: "wide-1", Topic: "t", Type: "Paid"})
	deliverAfterAFailure(t, st, "timeout waiting for ack")
	stores := []StoreLanes{{Name: DefaultStore, Store: st, Lanes: []relay.Lane{{Name: "main", Table: herald.DefaultTable}},
		Projections: []ProjectionRef{{Name: "gift_wall", Outbox: store.Scope{Table: herald.DefaultTable}}}}}
	if err := st.MigrateProjections(bg, store.DefaultProjectionTable); err != nil {
		t.Fatal(err)
	}
	srv, err := ListenStores("127.0.0.1:0", prometheus.NewRegistry(), stores)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(bg)
	base := "http://" + srv.Addr()
	fills := func(page string, b map[string]box, sel string) {
		t.Helper()
		if b[sel].Width < 0.98*b["main"].Width {
			t.Errorf("%s: %s is %.0f px wide in a page of %.0f px; want it to fill the width", page, sel, b[sel].Width, b["main"].Width)
		}
	}
	beside := func(page string, b map[string]box, left, right string) {
		t.Helper()
		if l, r := b[left], b[right]; r.Left < l.Right || r.Top > l.Top+1 || l.Top > r.Top+1 {
			t.Errorf("%s: %s at %+v and %s at %+v; want them side by side", page, left, l, right, r)
		}
	}

	err = chromedp.Do(ctx, chromedp.EmulateViewport(1600, 1000), chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#projections tr[data-projection="gift_wall"]`)))
	if err != nil {
		t.Fatal(err)
	}
	b := boxes(t, ctx, "#lanes", "#projections", "#unselected", "#overview-projections", "#overview-side")
	fills("overview", b, "#lanes")
	beside("overview", b, "#overview-projections", "#overview-side")
	if b["#overview-side"].Right < b["main"].Right-2 || b["#projections"].Width < 0.98*b["#overview-projections"].Width {
		t.Errorf("overview: the two columns do not fill the width: %+v", b)
	}
	screenshot(t, ctx, "dashboard-overview-wide")

	err = chromedp.Do(ctx, chromedp.Navigate(base+"/lanes/main?status=delivered"),
		chromedp.WaitVisible(chromedp.CSS(`#events tr[data-event-id="wide-1"]`)))
	if err != nil {
		t.Fatal(err)
	}
	fills("lane page", boxes(t, ctx, "#events"), "#events")

	err = chromedp.Do(ctx, chromedp.Navigate(base+"/lanes/main/events/wide-1"),
		chromedp.WaitVisible(chromedp.CSS(`#event-fields[data-status="delivered"]`)))
	if err != nil {
		t.Fatal(err)
	}
	beside("event page", boxes(t, ctx, "#event-record", "#event-history"), "#event-record", "#event-history")
	screenshot(t, ctx, "dashboard-event-wide")

	err = chromedp.Do(ctx, chromedp.EmulateViewport(1000, 900), chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#projections tr[data-projection="gift_wall"]`)))
	if err != nil {
		t.Fatal(err)
	}
	b = boxes(t, ctx, "#overview-projections", "#overview-side", "#lanes")
	if b["#overview-side"].Top < b["#overview-projections"].Bottom {
		t.Errorf("overview at 1000 px: the side column at %+v is not below the projections at %+v", b["#overview-side"], b["#overview-projections"])
	}
	fills("overview at 1000 px", b, "#lanes")
}
