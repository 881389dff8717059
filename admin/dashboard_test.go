package admin

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/relay"
)

// chromium finds a Chromium binary: $HERALD_CHROMIUM, else chromium or
// chromium-browser on PATH. Without one the browser test skips, or fails
// under CI=true (.ci/run installs Debian's chromium).
func chromium(t *testing.T) string {
	if p := os.Getenv("HERALD_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Unavailable(t, "Chromium (for the dashboard's browser test)", exec.ErrNotFound)
	return ""
}

// browser starts headless Chromium and returns a chromedp context on it.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// texter returns a function that reads the text of a CSS selector in the
// browser of ctx, failing t when it cannot.
func texter(t *testing.T, ctx context.Context) func(sel string) string {
	return func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
}

// Rule: the dashboard, in a real browser, shows every lane's rows by state
// and each table's rows that no lane selects, follows new events without a
// reload, and links a lane's dead count to its dead letters (ids and
// errors, no payload); markup in event data stays text.
func TestDashboardInBrowser(t *testing.T) {
	ctx := browser(t)
	bg := context.Background()
	st := openStore(t)
	enqueue(t, st, herald.Event{ID: "gift-1", Topic: "t", Type: "<b>GiftSent</b>", Payload: []byte(`{"card":"4111"}`)})
	enqueue(t, st, herald.Event{ID: "gift-2", Topic: "t", Type: "GiftSent"})
	killFirst(t, st, 1, "broker said no")
	enqueue(t, st, herald.Event{ID: "orphan-1", Topic: "t", Type: "Orphan"}) // no lane takes it
	lanes := []relay.Lane{{Name: "main", Table: herald.DefaultTable, ExcludeTypes: []string{"Orphan"}}}
	srv, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), st, lanes)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(bg)

	text := texter(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+srv.Addr()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#lanes tr[data-lane="main"]`))); err != nil {
		t.Fatal(err)
	}
	if pending, dead := text(`tr[data-lane="main"] td.pending`), text(`tr[data-lane="main"] td.dead`); pending != "1" || dead != "1" {
		t.Errorf("lane main shows pending %q, dead %q; want 1 and 1", pending, dead)
	}
	for class, status := range map[string]string{"pending": "pending", "retrying": "pending", "in-flight": "in_flight", "delivered": "delivered"} {
		href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('tr[data-lane="main"] td.`+class+` a').getAttribute("href")`))
		if err != nil || href != "/lanes/main?status="+status {
			t.Errorf("lane main's %s count links to %q (%v); want its events, status %s", class, href, err, status)
		}
	}
	if n := text(`#unselected tr[data-table="herald_outbox"] td.rows`); n != "1" {
		t.Errorf("table herald_outbox shows %q rows no lane selects; want 1", n)
	}

	if s := text(`tr[data-lane="main"] td.state`); s != "ok" {
		t.Errorf("lane main shows state %q; want ok", s)
	}
	if c, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('tr[data-lane="main"] td.state')).color`)); err != nil || c != "rgb(23, 105, 45)" {
		t.Errorf("lane main's ok state is coloured %q (%v); want green rgb(23, 105, 45)", c, err)
	}
	if s := text(`tr[data-lane="main"] td.store`); s != DefaultStore {
		t.Errorf("lane main shows store %q; want %s", s, DefaultStore)
	}

	enqueue(t, st, herald.Event{ID: "gift-3", Topic: "t", Type: "GiftSent"})
	if err := st.SetLanePaused(bg, "main", true); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx, chromedp.WaitVisible(`//tr[@data-lane="main"]/td[contains(@class,"pending") and .="2"]`),
		chromedp.WaitVisible(`//tr[@data-lane="main"]/td[contains(@class,"state") and text()="paused"]`))
	if err != nil {
		t.Fatalf("the dashboard did not follow a new event and the lane's pause: %v", err)
	}

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[data-lane="main"] td.dead a`)),
		chromedp.WaitVisible(chromedp.CSS(`#events tr[data-event-id="gift-1"]`))); err != nil {
		t.Fatal(err)
	}
	row := text(`#events tr[data-event-id="gift-1"]`)
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS(`#events`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gift-1", "<b>GiftSent</b>", "broker said no", "died", "ago"} {
		if !strings.Contains(row, want) {
			t.Errorf("dead letter row %q lacks %q", row, want)
		}
	}
	if strings.Contains(html, "4111") || strings.Contains(html, "<b>GiftSent") {
		t.Errorf("the dead letters must show neither payloads nor event data as markup:\n%s", html)
	}

	// The count of rows no lane selects leads to those rows, and only those.
	err = chromedp.Do(ctx, chromedp.Navigate("http://"+srv.Addr()+"/"),
		chromedp.Click(chromedp.CSS(`#unselected tr[data-table="herald_outbox"] td.rows a`)),
		chromedp.WaitVisible(chromedp.CSS(`#unselected-events tr[data-event-id="orphan-1"]`)))
	if err != nil {
		t.Fatalf("drill-down from rows no lane selects: %v", err)
	}
	if rows := text(`#unselected-events tbody`); strings.Contains(rows, "gift-") || !strings.Contains(rows, "Orphan") {
		t.Errorf("rows no lane selects lists %q; want orphan-1 alone", rows)
	}
}
