package admin

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/relay"
)

// Rule: in a real browser, a lane's events filter by tenant and creation
// time from the form into a shareable URL, and the list says how many
// match and which page of how many it shows; a bad time is a 400 naming
// the parameter.
func TestDashboardFiltersInBrowser(t *testing.T) {
	ctx := browser(t)
	bg := context.Background()
	st := openStore(t)
	for i := range 55 {
		enqueue(t, st, herald.Event{ID: fmt.Sprintf("acme-%02d", i), Topic: "t", Type: "Paid", Tenant: "acme"})
	}
	enqueue(t, st, herald.Event{ID: "zeta-1", Topic: "t", Type: "Paid", Tenant: "zeta"})
	srv, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), st, []relay.Lane{{Name: "main", Table: herald.DefaultTable}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(bg)
	base := "http://" + srv.Addr()
	text := texter(t, ctx)

	err = chromedp.Do(ctx, chromedp.Navigate(base+"/lanes/main"),
		chromedp.WaitVisible(chromedp.CSS(`#events tr[data-event-id="acme-00"]`)),
		chromedp.SendKeys(chromedp.CSS(`#f-tenant`), "acme"))
	if err == nil {
		_, err = chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`#filter button[type="submit"]`)))
	}
	if err == nil {
		err = chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`location.search === "?tenant=acme" && document.querySelector("#page-of").textContent.startsWith("55 ")`))
	}
	if err != nil {
		t.Fatalf("filter by tenant: %v", err)
	}
	if p := text(`#page-of`); p != "55 event(s) match · page 1 of 2" {
		t.Errorf("the list says %q; want 55 event(s) match · page 1 of 2", p)
	}
	_, err = chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`#next-page`)))
	if err == nil {
		err = chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#events tr[data-event-id="acme-54"]`)))
	}
	if err != nil {
		t.Fatalf("next page: %v", err)
	}
	if p := text(`#page-of`); p != "55 event(s) match · page 2 of 2" {
		t.Errorf("the second page says %q", p)
	}
	if html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS(`#events`))); strings.Contains(html, "zeta-1") {
		t.Error("the tenant filter let zeta's event through")
	}

	// Created from an hour from now: nothing matches, and the URL says so.
	future := time.Now().Add(time.Hour)
	err = chromedp.Do(ctx, chromedp.Navigate(base+"/lanes/main"),
		chromedp.WaitVisible(chromedp.CSS(`#events tr[data-event-id="acme-00"]`)),
		chromedp.SetValue(chromedp.CSS(`#f-since`), future.Format("2006-01-02T15:04:05")))
	if err == nil {
		_, err = chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`#filter button[type="submit"]`)))
	}
	if err == nil {
		err = chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`location.search.startsWith("?since=") && document.querySelector("#page-of").textContent.startsWith("0 ")`))
	}
	if err != nil {
		t.Fatalf("filter by time: %v", err)
	}
	if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#f-since`))); v == "" {
		t.Error("the time filter's input is empty after the filter was applied")
	}

	resp, err := http.Get(base + "/api/lanes/main/events?since=yesterday")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("since=yesterday: %d; want 400", resp.StatusCode)
	}
}
