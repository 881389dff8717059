package admin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// post sends body to url with token (none when empty) and returns the
// status code and the response body.
func post(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// listen serves st's default table as lane main with opts.
func listen(t *testing.T, st store.Store, opts ...Option) string {
	t.Helper()
	lanes := []relay.Lane{{Name: "main", Table: herald.DefaultTable}}
	srv, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), st, lanes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return "http://" + srv.Addr()
}

// Rule: every action is refused without the token (403 when none is
// configured, 401 when the caller's is missing or wrong) and changes
// nothing; with it, replay (dry run first), retry now, purge, pause and
// resume do what they say, and the event page shows the replay history.
func TestAPIActionsNeedTheToken(t *testing.T) {
	st := openStore(t)
	enqueue(t, st, herald.Event{ID: "d-1", Topic: "t", Type: "T"}, herald.Event{ID: "d-2", Topic: "t", Type: "T"})
	killFirst(t, st, 2, "no")
	enqueue(t, st, herald.Event{ID: "later", Topic: "t", Type: "T", AvailableAt: time.Now().Add(time.Hour)})
	actions := map[string]string{
		"replay": `{"event_ids":["d-1"]}`, "purge": `{"event_ids":["d-2"]}`, "retry": `{"event_ids":["later"]}`,
		"pause": ``, "resume": ``,
	}
	readOnly := listen(t, st)
	for name, body := range actions {
		if code, out := post(t, readOnly+"/api/lanes/main/"+name, "s3cret", body); code != http.StatusForbidden || !strings.Contains(out, "admin.token") {
			t.Errorf("%s without a configured token: %d %s; want 403 naming admin.token", name, code, out)
		}
	}
	base := listen(t, st, WithToken("s3cret"))
	for name, body := range actions {
		for _, token := range []string{"", "wrong"} {
			if code, _ := post(t, base+"/api/lanes/main/"+name, token, body); code != http.StatusUnauthorized {
				t.Errorf("%s with token %q: %d; want 401", name, token, code)
			}
		}
	}
	for id, want := range map[string]store.Status{"d-1": store.StatusDead, "d-2": store.StatusDead} {
		if r, _ := st.Get(context.Background(), herald.DefaultTable, id); r.Status != want {
			t.Fatalf("a refused action changed %s to %s", id, r.Status)
		}
	}

	var rep ReplayResponse
	code, out := post(t, base+"/api/lanes/main/replay", "s3cret", `{"event_ids":["d-1"],"dry_run":true}`)
	if code != 200 || json.Unmarshal([]byte(out), &rep) != nil || rep.Count != 1 || rep.Replayed != 0 || len(rep.Sample) != 1 {
		t.Fatalf("dry run: %d %s", code, out)
	}
	code, out = post(t, base+"/api/lanes/main/replay", "s3cret", `{"event_ids":["d-1"],"by":"ops","reason":"fixed","wait_seconds":0.2}`)
	if code != 200 || json.Unmarshal([]byte(out), &rep) != nil || rep.Replayed != 1 {
		t.Fatalf("replay: %d %s", code, out)
	}
	// No relay runs here: the answer says the event is not published yet, and why.
	if o := rep.Outcome; o == nil || o.Replayed != 1 || o.Pending != 1 || o.Published != 0 ||
		len(o.Why) != 1 || !strings.Contains(o.Why[0], "not published within 200ms") {
		t.Fatalf("replay outcome with no relay: %s", out)
	}
	if code, out := post(t, base+"/api/lanes/main/replay", "s3cret", `{}`); code != 400 || !strings.Contains(out, "all") {
		t.Fatalf("an unfiltered replay must ask for all: %d %s", code, out)
	}
	for name, want := range map[string]string{"retry": `"changed":1`, "purge": `"changed":1`, "pause": `"paused":true`} {
		if code, out := post(t, base+"/api/lanes/main/"+name, "s3cret", actions[name]); code != 200 || !strings.Contains(out, want) {
			t.Errorf("%s: %d %s; want %s", name, code, out, want)
		}
	}
	if states, _ := st.LaneStates(context.Background()); !states["main"].Paused {
		t.Error("pause through the API did not pause the lane")
	}
	if _, err := st.Get(context.Background(), herald.DefaultTable, "d-2"); err == nil {
		t.Error("purge through the API left d-2")
	}
	var d EventDetail
	getJSON(t, base+"/api/lanes/main/events/d-1", 200, &d)
	if d.Status != store.StatusPending || len(d.Replays) != 1 || !strings.HasPrefix(d.Replays[0].By, "ops from 127.0.0.1") ||
		d.Replays[0].Reason != "fixed" || d.Replays[0].From != store.StatusDead {
		t.Fatalf("event page after an API replay: %+v", d)
	}
	var s map[string]bool
	getJSON(t, base+"/api/session", 200, &s)
	if !s["actions"] || s["authorized"] {
		t.Fatalf("session without a token: %v", s)
	}
}

// Rule: the events API searches a lane by status, type, key and event id,
// a page at a time; the event page caps the payload and keeps it as text.
func TestAPIEventsSearchAndPage(t *testing.T) {
	st := openStore(t)
	for i := range 5 {
		enqueue(t, st, herald.Event{ID: "e-" + string(rune('a'+i)), Topic: "t", Type: "Order", PartitionKey: "k" + string(rune('0'+i%2))})
	}
	big := strings.Repeat("<b>x</b>", MaxPayloadShown/8+10)
	enqueue(t, st, herald.Event{ID: "big", Topic: "t", Type: "Blob", Payload: []byte(big), Headers: map[string]string{"h": "v"}})
	base := listen(t, st)
	var page EventPage
	getJSON(t, base+"/api/lanes/main/events?type=Order&key=k0&limit=2", 200, &page)
	if len(page.Events) != 2 || page.NextAfter == 0 || page.Events[0].EventID != "e-a" || page.Events[1].EventID != "e-c" {
		t.Fatalf("first page: %+v", page)
	}
	next := page.NextAfter
	page = EventPage{}
	getJSON(t, base+"/api/lanes/main/events?type=Order&key=k0&limit=2&after="+itoa(next), 200, &page)
	if len(page.Events) != 1 || page.Events[0].EventID != "e-e" || page.NextAfter != 0 {
		t.Fatalf("second page: %+v", page)
	}
	page = EventPage{}
	getJSON(t, base+"/api/lanes/main/events?type=Order&key=k0&limit=2&order=newest", 200, &page)
	if len(page.Events) != 2 || page.Events[0].EventID != "e-e" || page.Events[1].EventID != "e-c" || page.NextAfter == 0 {
		t.Fatalf("first page newest first: %+v", page)
	}
	next = page.NextAfter
	page = EventPage{}
	getJSON(t, base+"/api/lanes/main/events?type=Order&key=k0&limit=2&order=newest&after="+itoa(next), 200, &page)
	if len(page.Events) != 1 || page.Events[0].EventID != "e-a" || page.NextAfter != 0 {
		t.Fatalf("second page newest first: %+v", page)
	}
	if code, out := get(t, base+"/api/lanes/main/events?order=sideways"); code != 400 || !strings.Contains(out, "order") {
		t.Errorf("order=sideways: %d %s; want 400 naming order", code, out)
	}
	page = EventPage{}
	getJSON(t, base+"/api/lanes/main/events?event_id=big", 200, &page)
	if len(page.Events) != 1 || page.Events[0].Type != "Blob" {
		t.Fatalf("search by event id: %+v", page)
	}
	var hidden EventDetail
	getJSON(t, base+"/api/lanes/main/events/big", 200, &hidden)
	if !hidden.PayloadHidden || hidden.Payload != nil || len(hidden.Headers) != 0 || hidden.PayloadBytes != len(big) {
		t.Fatalf("without a token the event page must hide payload and headers: %+v", hidden.EventSummary)
	}
	base = listen(t, st, WithToken("s3cret"))
	var d EventDetail
	getJSONWith(t, base+"/api/lanes/main/events/big", "s3cret", &d)
	if d.Payload == nil || len(*d.Payload) != MaxPayloadShown || !d.PayloadTruncated || d.PayloadBytes != len(big) || d.Headers["h"] != "v" {
		t.Fatalf("event page payload: %d bytes shown of %d, truncated %v", len(deref(d.Payload)), d.PayloadBytes, d.PayloadTruncated)
	}
	if code, out := get(t, base+"/api/lanes/main/events?status=lost"); code != 400 || !strings.Contains(out, "lost") {
		t.Fatalf("bad status: %d %s", code, out)
	}
	if code, out := get(t, base+"/api/lanes/main/events/nope"); code != 404 || !strings.Contains(out, "nope") {
		t.Fatalf("unknown event: %d %s", code, out)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Rule: the charts' points are the relay counters' rates over each
// interval and the lane's lag, and only the last hour is kept.
func TestSeriesSamplesRelayCounters(t *testing.T) {
	st := openStore(t)
	lanes := []relay.Lane{{Name: "main", Table: herald.DefaultTable}}
	m, err := NewMetrics(prometheus.NewRegistry(), st, lanes)
	if err != nil {
		t.Fatal(err)
	}
	s := newSeries(single(st, lanes, nil), m, 15*time.Second)
	ctx := context.Background()
	t0 := time.Now()
	m.BatchDone(relay.BatchStats{Lane: "main", Delivered: 30})
	s.sample(ctx, t0)
	m.BatchDone(relay.BatchStats{Lane: "main", Delivered: 30, Dead: 3})
	s.sample(ctx, t0.Add(15*time.Second))
	pts := s.points["main"]
	if len(pts) != 1 || pts[0].Rate != 2 || pts[0].DeadRate != 0.2 {
		t.Fatalf("points %+v; want one, 2/s with 0.2/s dead (the first sample only starts the count)", pts)
	}
	s.sample(ctx, t0.Add(time.Hour+16*time.Second))
	if pts := s.points["main"]; len(pts) != 1 || !pts[0].At.Equal(t0.Add(time.Hour+16*time.Second).UTC()) {
		t.Fatalf("after an hour the first point must go: %+v", pts)
	}
}

// getJSONWith is getJSON with the admin token, expecting 200.
func getJSONWith(t *testing.T, url, token string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(v) != nil {
		t.Fatalf("GET %s with the token: %d", url, resp.StatusCode)
	}
}
