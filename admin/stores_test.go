package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/relay"
)

// Rule: over several stores, /api/lanes names each lane's store and reads
// its rows from that store; /readyz names the store that does not answer;
// herald_store_up has one series per store; actions reach the lane's own
// store.
func TestListenStores(t *testing.T) {
	ctx := context.Background()
	a, b := openStore(t), openStore(t)
	enqueue(t, b, herald.Event{Topic: "t", Type: "A"}, herald.Event{Topic: "t", Type: "A"})
	stores := []StoreLanes{
		{Name: "a", Store: a, Lanes: []relay.Lane{{Name: "la", Table: herald.DefaultTable}}, Health: relay.NewHealth()},
		{Name: "b", Store: b, Lanes: []relay.Lane{{Name: "lb", Table: herald.DefaultTable}}, Health: relay.NewHealth()},
	}
	reg := prometheus.NewRegistry()
	if err := RegisterStoresHealth(reg, stores); err != nil {
		t.Fatal(err)
	}
	srv, err := ListenStores("127.0.0.1:0", reg, stores)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(ctx)
	base := "http://" + srv.Addr()
	var report StatusReport
	getJSON(t, base+"/api/lanes", http.StatusOK, &report)
	if len(report.Lanes) != 2 || report.Lanes[0].Store != "a" || report.Lanes[0].Pending != 0 ||
		report.Lanes[1].Store != "b" || report.Lanes[1].Pending != 2 || len(report.Unselected) != 2 {
		t.Fatalf("/api/lanes = %+v; want la in a with 0 pending, lb in b with 2", report)
	}
	_, metrics := get(t, base+"/metrics")
	for _, want := range []string{`herald_store_up{store="a"} 1`, `herald_store_up{store="b"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, metrics)
		}
	}
	if code, body := get(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d %s", code, body)
	}
	b.Close()
	if code, body := get(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "store b: store unreachable") {
		t.Errorf("/readyz with store b closed = %d %q; want 503 naming store b", code, body)
	}
	var page struct{ Dead []json.RawMessage }
	getJSON(t, base+"/api/lanes/la/dead", http.StatusOK, &page) // store a still answers
}

// Rule: a store still being opened (Opening) does not hold up the server:
// /healthz answers, /readyz is 503 naming the store and why, its
// herald_store_up is 0 while the other store's is 1, /api/lanes shows the
// other store's lanes and marks the awaited one's, and calls that read the
// awaited store answer 503; once opened, it is like any other store.
func TestListenStoresWhileOneOpens(t *testing.T) {
	ctx := context.Background()
	a, b := openStore(t), openStore(t)
	enqueue(t, a, herald.Event{Topic: "t", Type: "A"})
	opening := NewOpening()
	opening.Failed(errors.New("dial tcp 127.0.0.1:1: connect: connection refused"))
	stores := []StoreLanes{
		{Name: "a", Store: a, Lanes: []relay.Lane{{Name: "la", Table: herald.DefaultTable}}, Health: relay.NewHealth()},
		{Name: "b", Opening: opening, Lanes: []relay.Lane{{Name: "lb", Table: herald.DefaultTable}}, Health: relay.NewHealth()},
	}
	reg := prometheus.NewRegistry()
	if err := RegisterStoresHealth(reg, stores); err != nil {
		t.Fatal(err)
	}
	m, err := NewStoresMetrics(reg, stores)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ListenStores("127.0.0.1:0", reg, stores, WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(ctx)
	base := "http://" + srv.Addr()
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d while store b opens", code)
	}
	code, body := get(t, base+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "store b: not reachable yet") ||
		!strings.Contains(body, "connection refused") || strings.Contains(body, "store a") {
		t.Errorf("/readyz while store b opens = %d %q; want 503 naming store b alone and why", code, body)
	}
	_, metrics := get(t, base+"/metrics")
	for _, want := range []string{`herald_store_up{store="a"} 1`, `herald_store_up{store="b"} 0`,
		`herald_outbox_events{lane="la",state="pending",table="herald_outbox"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, metrics)
		}
	}
	var report StatusReport
	getJSON(t, base+"/api/lanes", http.StatusOK, &report)
	if len(report.Lanes) != 2 || report.Lanes[0].Pending != 1 || report.Lanes[0].StoreError != "" ||
		!strings.HasPrefix(report.Lanes[1].StoreError, "store b: not reachable yet") {
		t.Errorf("/api/lanes while store b opens = %+v; want la counted, lb marked", report)
	}
	if code, body := get(t, base+"/api/lanes/lb/events"); code != http.StatusServiceUnavailable {
		t.Errorf("/api/lanes/lb/events while store b opens = %d %s; want 503", code, body)
	}

	opening.Opened(b)
	if code, body := get(t, base+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz once store b opened = %d %q", code, body)
	}
	if _, metrics := get(t, base+"/metrics"); !strings.Contains(metrics, `herald_store_up{store="b"} 1`) {
		t.Errorf("/metrics once store b opened:\n%s", metrics)
	}
	var page struct{ Events []json.RawMessage }
	getJSON(t, base+"/api/lanes/lb/events", http.StatusOK, &page)
}
