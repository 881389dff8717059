package admin

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// screenshot saves the page as docs/img/name.png when
// HERALD_UPDATE_SCREENSHOTS is set (the pictures docs/operations.md shows).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if os.Getenv("HERALD_UPDATE_SCREENSHOTS") == "" {
		return
	}
	if err := os.WriteFile(filepath.Join("..", "docs", "img", name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Rule: in a real browser, the event page hides payload and headers
// without the admin token and refuses its actions, changing nothing; with
// the token it shows the payload's markup as text (no element from it, no
// script run), its headers, error and time of death; replay, pause and
// retry now work from the pages and the replay shows in the event's
// history; the lane page draws its rate and lag charts and pages through
// events; search finds an event by key from the overview.
func TestDashboardActionsInBrowser(t *testing.T) {
	ctx := browser(t)
	bg := context.Background()
	st := openStore(t)
	evil := `{"note":"<img src=x onerror=window.pwned=1><script>window.pwned=2</script>"}`
	enqueue(t, st, herald.Event{ID: "poison-1", Topic: "orders", Type: "OrderPlaced", PartitionKey: "cust-7",
		Payload: []byte(evil), Headers: map[string]string{"x-note": "<i>hi</i>"}})
	killFirst(t, st, 1, "broker said <no>")
	for i := range 60 {
		enqueue(t, st, herald.Event{ID: "order-" + string(rune('A'+i%26)) + string(rune('a'+i/26)), Topic: "orders",
			Type: "OrderPlaced", PartitionKey: "cust-" + string(rune('0'+i%5))})
	}
	enqueue(t, st, herald.Event{ID: "later-1", Topic: "orders", Type: "Reminder", AvailableAt: time.Now().Add(time.Hour)})
	reg := prometheus.NewRegistry()
	lanes := []relay.Lane{{Name: "main", Table: herald.DefaultTable}}
	m, err := NewMetrics(reg, st, lanes)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Listen("127.0.0.1:0", reg, st, lanes, WithToken("s3cret"), WithMetrics(m), WithSeriesInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(bg)
	base := "http://" + srv.Addr()
	fillHour(srv.series, "main")
	text := texter(t, ctx)
	status := func(id string) store.Status {
		r, err := st.Get(bg, herald.DefaultTable, id)
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}

	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1200, 900), chromedp.Navigate(base+"/lanes/main/events/poison-1"),
		chromedp.WaitVisible(chromedp.CSS(`#event-fields[data-status="dead"]`))); err != nil {
		t.Fatal(err)
	}
	// Without the token: no payload or headers, actions refused, nothing changes.
	if note := text(`#payload-note`); !strings.Contains(note, "hidden") || !strings.Contains(note, "admin token") {
		t.Errorf("without the token the payload must be hidden, saying why: %q", note)
	}
	if body, _ := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`#payload`))); strings.Contains(body, "pwned") {
		t.Errorf("the payload was sent without the token: %q", body)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#ev-replay`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#notice").textContent.includes("refused")`)); err != nil {
		t.Fatal(err)
	}
	if n := text(`#notice`); !strings.Contains(n, "admin token") {
		t.Errorf("the refusal must say the token is needed: %q", n)
	}
	if s := status("poison-1"); s != store.StatusDead {
		t.Fatalf("a refused replay changed poison-1 to %s", s)
	}

	// With the token: the payload, as text, then a replay from the event page.
	err = chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#token`), "s3cret"), chromedp.Click(chromedp.CSS(`#token-form button`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#mode").textContent === "actions enabled"`),
		chromedp.WaitVisible(chromedp.CSS(`#payload`)))
	if err != nil {
		t.Fatalf("entering the token: %v", err)
	}
	if p := text(`#payload`); !strings.Contains(p, "<script>window.pwned=2</script>") || !strings.Contains(p, "<img src=x") {
		t.Errorf("the payload's markup must show as text: %q", p)
	}
	injected, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.pwned !== undefined || document.querySelector("#payload *, #headers i") !== null`))
	if err != nil || injected {
		t.Fatalf("markup from the payload or headers became elements or ran (%v)", err)
	}
	fields := text(`#event-fields`)
	for _, want := range []string{"died", "attempts", "cust-7", "OrderPlaced"} {
		if !strings.Contains(fields, want) {
			t.Errorf("event page fields lack %q: %q", want, fields)
		}
	}
	if h, e := text(`#headers`), text(`#last-error`); !strings.Contains(h, "<i>hi</i>") || e != "broker said <no>" {
		t.Errorf("headers %q, last error %q", h, e)
	}
	screenshot(t, ctx, "dashboard-event")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#ev-replay`)),
		chromedp.WaitVisible(chromedp.CSS(`#event-fields[data-status="pending"]`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#replays").textContent.includes("dashboard from 127.0.0.1")`))
	if err != nil {
		t.Fatalf("replay with the token: %v", err)
	}
	if s := status("poison-1"); s != store.StatusPending {
		t.Fatalf("after the replay poison-1 is %s", s)
	}

	// The lane page: charts, paging, pause, retry now.
	err = chromedp.Do(ctx, chromedp.Navigate(base+"/lanes/main?status=pending"),
		chromedp.WaitVisible(chromedp.CSS(`#events tr[data-event-id="poison-1"]`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#chart-rate polyline").getAttribute("points").split(" ").length >= 200`),
		chromedp.Poll[chromedp.Void](`document.querySelector("#chart-lag polyline").getAttribute("points").split(" ").length >= 200`))
	if err != nil {
		t.Fatalf("lane page: %v", err)
	}
	// Hovering a chart shows the nearest point's time and value, with its unit.
	tip, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const svg = document.querySelector("#chart-lag"), r = svg.getBoundingClientRect();
		svg.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + r.width / 2, clientY: r.top + 40, bubbles: true}));
		return svg.querySelector("text.tooltip").textContent;
	})()`))
	if err != nil || !regexp.MustCompile(`^\d{1,2}:\d\d:\d\d.*: [\d.]+ s$`).MatchString(tip) {
		t.Errorf("hovering the lag chart shows %q (%v); want the point's time and its value in s", tip, err)
	}
	if y, _ := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`#chart-lag text.y-max`))); !strings.HasSuffix(y, " s") {
		t.Errorf("the lag chart's y axis is labelled %q; want its maximum in s", y)
	}
	screenshot(t, ctx, "dashboard-lane")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#next-page`)),
		chromedp.WaitVisible(chromedp.CSS(`#events tr[data-event-id="later-1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#first-page`))); err != nil {
		t.Fatalf("the next page must hold the 51st pending event: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[data-event-id="later-1"] button.retry`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#notice").textContent.includes("done")`)); err != nil {
		t.Fatal(err)
	}
	if r, _ := st.Get(bg, herald.DefaultTable, "later-1"); time.Until(r.AvailableAt) > time.Minute {
		t.Errorf("retry now left later-1 due at %v", r.AvailableAt)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#pause`)),
		chromedp.Poll[chromedp.Void](`document.querySelector("#lane-state").textContent.startsWith("paused")`)); err != nil {
		t.Fatal(err)
	}
	if states, _ := st.LaneStates(bg); !states["main"].Paused {
		t.Error("pause from the lane page did not pause the lane")
	}

	// The overview, and search by key.
	err = chromedp.Do(ctx, chromedp.EmulateViewport(1200, 560), chromedp.Navigate(base+"/?key=cust-7"),
		chromedp.WaitVisible(chromedp.CSS(`#search-results tr[data-event-id="poison-1"]`)))
	if err != nil {
		t.Fatalf("search by key: %v", err)
	}
	err = chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`(document.querySelector('tr[data-lane="main"] svg.spark.rate polyline')?.getAttribute("points") || "").split(" ").length >= 200 &&
		(document.querySelector('tr[data-lane="main"] svg.spark.lag_seconds polyline')?.getAttribute("points") || "").split(" ").length >= 200`))
	if err != nil {
		t.Fatalf("the overview must draw the lane's last hour as sparklines: %v", err)
	}
	screenshot(t, ctx, "dashboard-overview")
}

// fillHour gives lane an hour of chart points, as a relay that has been
// delivering for that long would have, for the screenshot: a daily-looking
// wave of deliveries and a lag spike while the rate peaks.
func fillHour(s *series, lane string) {
	now := time.Now()
	pts := make([]Point, 0, 240)
	for i := 239; i >= 0; i-- {
		x := float64(240-i) / 240
		rate := 40 + 30*math.Sin(x*2*math.Pi*1.5) + 8*math.Sin(x*37)
		lag := 0.05 + 0.03*math.Sin(x*23)
		if x > 0.62 && x < 0.7 {
			lag += 4 * math.Sin((x-0.62)/0.08*math.Pi)
		}
		pts = append(pts, Point{At: now.Add(-time.Duration(i) * 15 * time.Second).UTC(), Rate: rate, LagSeconds: lag})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.points[lane] = pts
}
