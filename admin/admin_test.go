package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openStore opens a SQLite store with the default table migrated, closed
// when the test ends (tests may close it earlier).
func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "h.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx, herald.DefaultTable); err != nil {
		t.Fatal(err)
	}
	return st
}

// enqueue commits evs in one transaction.
func enqueue(t *testing.T, st store.Store, evs ...herald.Event) {
	t.Helper()
	ctx := context.Background()
	tx, err := st.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := herald.Enqueue(ctx, tx, evs...); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// killFirst claims the first n rows and moves them to dead with msg.
func killFirst(t *testing.T, st store.Store, n int, msg string) {
	t.Helper()
	ctx := context.Background()
	recs, err := st.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: herald.DefaultTable}, Owner: "w", Token: 7,
		Lease: time.Minute, Limit: n})
	if err != nil || len(recs) != n {
		t.Fatalf("claim: %d rows, %v", len(recs), err)
	}
	fails := make([]store.Failure, n)
	for i := range fails {
		fails[i] = store.Failure{ID: recs[i].ID, Error: msg}
	}
	if _, err := st.Kill(ctx, store.Fence{Table: herald.DefaultTable, Token: 7}, fails); err != nil {
		t.Fatal(err)
	}
}

// startRelay runs a relay configured by cfg (its logs discarded) until the
// test ends.
func startRelay(t *testing.T, cfg relay.Config) {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	r, err := relay.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// get fetches url and returns the status code and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Rule: /metrics shows what the workers did (from the relay's observer) and
// each lane's rows by state (read from the store at scrape time); /healthz
// answers while the process serves; /readyz follows the store.
func TestServerReportsRelayAndLaneState(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	enqueue(t, st, herald.Event{Topic: "t", Type: "A"}, herald.Event{Topic: "t", Type: "B"})
	reg := prometheus.NewRegistry()
	lanes := []relay.Lane{{Name: "main", Table: herald.DefaultTable}, {Name: "only-b", Table: herald.DefaultTable, IncludeTypes: []string{"B"}}}
	m, err := NewMetrics(reg, st, lanes)
	if err != nil {
		t.Fatal(err)
	}
	m.BatchDone(relay.BatchStats{Lane: "main", Claimed: 3, Delivered: 2, Retried: 1, Claim: time.Millisecond})
	srv, err := Listen("127.0.0.1:0", reg, st, lanes)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(ctx)
	base := "http://" + srv.Addr()

	code, body := get(t, base+"/metrics")
	for _, want := range []string{
		`herald_relay_events_total{lane="main",outcome="delivered"} 2`,
		`herald_relay_events_total{lane="main",outcome="retried"} 1`,
		`herald_relay_step_seconds_count{lane="main",step="claim"} 1`,
		`herald_outbox_events{lane="main",state="pending",table="herald_outbox"} 2`,
		`herald_outbox_events{lane="only-b",state="pending",table="herald_outbox"} 1`,
		`herald_outbox_events{lane="main",state="dead",table="herald_outbox"} 0`,
	} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("/metrics (status %d) lacks %s", code, want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d", code)
	}
	if code, _ := get(t, base+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz with the store up = %d", code)
	}
	st.Close()
	if code, body := get(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "store unreachable") {
		t.Errorf("/readyz with the store closed = %d %q, want 503 naming the store", code, body)
	}
	if _, body := get(t, base+"/metrics"); !strings.Contains(body, `herald_outbox_stats_errors_total{lane="main"} 1`) {
		t.Errorf("a failed read of a lane's rows must be counted:\n%s", body)
	}
}

// Rule: a taken address is an error naming it.
func TestListenOnTakenAddress(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := Listen("127.0.0.1:0", reg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close(context.Background())
	if _, err := Listen(first.Addr(), reg, nil, nil); err == nil || !strings.Contains(err.Error(), first.Addr()) {
		t.Fatalf("listen on a taken address: %v, want an error naming %s", err, first.Addr())
	}
}

// Rule: the API answers lanes' counts and pages through dead events
// (ids and errors, no payloads); bad parameters are 400s naming them, an
// unknown lane a 404.
func TestAPILanesAndDeadLetters(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	secret := []byte(`{"card":"4111"}`)
	for _, id := range []string{"e1", "e2", "e3"} {
		enqueue(t, st, herald.Event{ID: id, Topic: "t", Type: "A", Payload: secret})
	}
	killFirst(t, st, 2, "broker said no")
	lanes := []relay.Lane{{Name: "main", Table: herald.DefaultTable}}
	srv, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), st, lanes)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(ctx)
	base := "http://" + srv.Addr()

	var status struct{ Lanes []LaneStatus }
	getJSON(t, base+"/api/lanes", http.StatusOK, &status)
	if len(status.Lanes) != 1 || status.Lanes[0].Dead != 2 || status.Lanes[0].Pending != 1 {
		t.Errorf("/api/lanes = %+v, want main with 2 dead, 1 pending", status)
	}
	var page struct {
		Dead      []DeadSummary
		NextAfter int64 `json:"next_after"`
	}
	body := getJSON(t, base+"/api/lanes/main/dead?limit=1", http.StatusOK, &page)
	if len(page.Dead) != 1 || page.Dead[0].EventID != "e1" || page.Dead[0].LastError != "broker said no" || page.NextAfter == 0 {
		t.Errorf("first page = %s", body)
	}
	if strings.Contains(body, "4111") {
		t.Errorf("a dead listing must not carry payloads: %s", body)
	}
	body = getJSON(t, fmt.Sprintf("%s/api/lanes/main/dead?limit=1&after=%d", base, page.NextAfter), http.StatusOK, &page)
	if len(page.Dead) != 1 || page.Dead[0].EventID != "e2" {
		t.Errorf("second page = %s", body)
	}
	body = getJSON(t, base+"/api/lanes/main/dead?limit=1&order=newest", http.StatusOK, &page)
	if len(page.Dead) != 1 || page.Dead[0].EventID != "e2" || page.NextAfter == 0 {
		t.Errorf("first page, newest first = %s", body)
	}
	body = getJSON(t, fmt.Sprintf("%s/api/lanes/main/dead?limit=1&order=newest&after=%d", base, page.NextAfter), http.StatusOK, &page)
	if len(page.Dead) != 1 || page.Dead[0].EventID != "e1" {
		t.Errorf("second page, newest first = %s", body)
	}
	var apiErr struct{ Error string }
	getJSON(t, base+"/api/lanes/nope/dead", http.StatusNotFound, &apiErr)
	if !strings.Contains(apiErr.Error, `"nope"`) {
		t.Errorf("unknown lane error = %q", apiErr.Error)
	}
	for _, q := range []string{"limit=0", "limit=abc", "after=-1", "order=latest"} {
		getJSON(t, base+"/api/lanes/main/dead?"+q, http.StatusBadRequest, &apiErr)
		if name, _, _ := strings.Cut(q, "="); !strings.HasPrefix(apiErr.Error, name+":") {
			t.Errorf("?%s: error %q does not name %s", q, apiErr.Error, name)
		}
	}
}

// Rule: /api/lanes reports, per table, the pending rows that no lane
// selects (considering every lane's tenant and type filters), within the
// ?tenant asked for, next to the lanes' unchanged counts.
func TestAPIUnselected(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	enqueue(t, st, herald.Event{Topic: "t", Type: "A"},
		herald.Event{Topic: "t", Type: "B", Tenant: "t1"}, // no lane takes it
		herald.Event{Topic: "t", Type: "B", Tenant: "t2"})
	lanes := []relay.Lane{{Name: "main", Table: herald.DefaultTable, IncludeTypes: []string{"A"}},
		{Name: "t2", Table: herald.DefaultTable, Tenant: "t2"}}
	srv, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), st, lanes)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(ctx)
	base := "http://" + srv.Addr()
	for query, want := range map[string]int64{"": 1, "?tenant=t1": 1, "?tenant=t2": 0} {
		var status struct {
			Lanes      []map[string]any
			Unselected []TableUnselected
		}
		body := getJSON(t, base+"/api/lanes"+query, http.StatusOK, &status)
		if len(status.Unselected) != 1 || status.Unselected[0] != (TableUnselected{Store: DefaultStore, Table: herald.DefaultTable, Rows: want}) {
			t.Errorf("/api/lanes%s = %s; want %d unselected rows in %s", query, body, want, herald.DefaultTable)
		}
		if len(status.Lanes) != 2 || len(status.Lanes[0]) != 10 || status.Lanes[0]["store"] != DefaultStore {
			t.Errorf("/api/lanes%s lanes = %v; want 2 lanes of the 10 fields (the 8 of before, paused and store)", query, status.Lanes)
		}
	}
}

// getJSON fetches url, checks the status code, decodes the body into v and
// returns the body.
func getJSON(t *testing.T, url string, wantCode int, v any) string {
	t.Helper()
	code, body := get(t, url)
	if code != wantCode {
		t.Fatalf("GET %s = %d, want %d: %s", url, code, wantCode, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, body)
	}
	return body
}
