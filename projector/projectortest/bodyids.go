package projectortest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/store"
)

// BodyIDConfig describes a subscription for RunBodyIDs.
type BodyIDConfig struct {
	// Subscribe returns a new subscriber reading the subscription's stream
	// from its start under the consumer name durable (one per database).
	Subscribe func(tb testing.TB, durable string) broker.Subscriber
	// Publisher and Destination publish Herald's copies (CloudEvents
	// headers, the id in the broker's dedupe field).
	Publisher   broker.Publisher
	Destination string
	// PublishRaw sends messages as another producer does, bypassing Herald.
	PublishRaw func(tb testing.TB, msgs []RawMessage)
	// Events is how many events each producer sends. Defaults to 10.
	Events int
}

// bodyIDMessage is the body both producers send: the id, type and tenant
// live in it, as an existing service's own worker publishes them.
type bodyIDMessage struct {
	EventID   string `json:"eventId,omitempty"`
	EventType string `json:"eventType"`
	AppCode   string `json:"appCode"`
	Payload
}

// BodyIDs is the EventFrom RunBodyIDs projects with.
var BodyIDs = projector.EventFrom{ID: projector.Field{Path: "$.eventId"}, Type: projector.Field{Path: "$.eventType"},
	Tenant: projector.Field{Path: "$.appCode"}}

// RunBodyIDs checks that a projection taking the event id from the body
// (Config.EventFrom) deduplicates the messages of two producers in one
// ledger, on every database: each event is published by Herald (with its
// CloudEvents headers) and again, the same body with no headers, by a
// stand-in for an old worker, and is applied once. A message without the
// id, and one whose id is empty, go dead with the reason naming the path,
// and the projection goes on.
func RunBodyIDs(t *testing.T, cfg BodyIDConfig) {
	if cfg.Events <= 0 {
		cfg.Events = 10
	}
	run := Name("bid")
	bodies := make([][]byte, cfg.Events)
	var published []broker.Message
	for i := range bodies {
		m := bodyIDMessage{EventID: fmt.Sprintf("%s-%02d", run, i), EventType: "Counted", AppCode: "voice",
			Payload: Payload{Key: fmt.Sprintf("%s-k%02d", run, i), Seq: 1}}
		bodies[i], _ = json.Marshal(m)
		published = append(published, broker.Message{Destination: cfg.Destination, Event: herald.Event{ID: m.EventID,
			Type: "Counted", Tenant: "voice", Topic: "count", PartitionKey: m.Key, Payload: bodies[i]}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, r := range cfg.Publisher.Publish(ctx, published) {
		if r.Err != nil {
			t.Fatalf("publish %s: %v", published[i].Event.ID, r.Err)
		}
	}
	raw := make([]RawMessage, 0, cfg.Events+2)
	for _, b := range bodies {
		raw = append(raw, RawMessage{Body: b})
	}
	missing, _ := json.Marshal(bodyIDMessage{EventType: "Counted", AppCode: "voice", Payload: Payload{Key: run + "-missing", Seq: 1}})
	empty := []byte(`{"eventId":"","eventType":"Counted","appCode":"voice","key":"` + run + `-empty","seq":1}`)
	cfg.PublishRaw(t, append(raw, RawMessage{Body: missing}, RawMessage{Body: empty}))
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) { projectBodyIDs(t, b, cfg, run) })
	}
}

// projectBodyIDs projects the stream into a fresh ledger on one database
// until every message was acked, then checks the ledger and the model.
func projectBodyIDs(t *testing.T, b Backend, cfg BodyIDConfig, run string) {
	s := b.Open(t)(t)
	ledger := Name("herald_bid_pe")
	if err := s.MigrateProjections(context.Background(), ledger); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = s.DB().Exec("DROP TABLE " + ledger) })
	model := NewModel(t, s)
	var bad sync.Map // ids or tenants the handler saw that are not the body's
	p, err := projector.New(projector.Config{Settings: projector.Settings{Name: "bodyids", Table: ledger, EventFrom: BodyIDs}, Store: s,
		Logger: slog.New(slog.DiscardHandler),
		Handler: func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
			if !strings.HasPrefix(ev.ID, run+"-") || ev.Tenant != "voice" {
				bad.Store(ev.ID, ev.Tenant)
			}
			return model.Bump(ctx, tx, ev)
		}})
	if err != nil {
		t.Fatal(err)
	}
	var acks atomic.Int32
	sub := cfg.Subscribe(t, b.Name+strings.TrimPrefix(run, "bid"))
	t.Cleanup(func() { _ = sub.Close() })
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = p.Run(ctx, CountAcks{sub, &acks}) })
	want := int32(2*cfg.Events + 2)
	Eventually(t, time.Minute, fmt.Sprintf("%d messages acked", want), func() bool { return acks.Load() >= want })
	stop()
	wg.Wait()
	checkBodyIDs(t, s, model, ledger, cfg.Events, run)
	bad.Range(func(id, tenant any) bool {
		t.Errorf("[ids from the body] the handler saw id %v tenant %v", id, tenant)
		return true
	})
}

// checkBodyIDs checks one application per event and the two dead rows.
func checkBodyIDs(t *testing.T, s Store, model *Model, ledger string, events int, run string) {
	t.Helper()
	st, err := s.ProjectionStats(context.Background(), ledger, "bodyids")
	if err != nil || len(st) != 1 || st[0].Done != int64(events) || st[0].Dead != 2 || st[0].Failed != 0 {
		t.Errorf("[one ledger] stats %+v, %v; want %d done (one per event id), 2 dead", st, err, events)
	}
	for i := range events {
		if n := model.Count(t, s.DB(), fmt.Sprintf("%s-k%02d", run, i)); n != 1 {
			t.Errorf("[exactly once] event %d applied %d times, want once for both producers' copies", i, n)
		}
	}
	if n := model.Count(t, s.DB(), run+"-missing") + model.Count(t, s.DB(), run+"-empty"); n != 0 {
		t.Errorf("[never a silent new event] the messages without an id were applied %d times", n)
	}
	dead, err := s.ListProjection(context.Background(), store.ProjectionListParams{Table: ledger, Projection: "bodyids",
		State: store.ProjectionDead, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]bool{}
	for _, r := range dead {
		reasons[r.LastError] = true
	}
	for _, want := range []string{"event id from $.eventId: the body has no value there", "event id from $.eventId: is empty"} {
		found := false
		for r := range reasons {
			found = found || strings.Contains(r, want)
		}
		if !found {
			t.Errorf("[dead with the reason] no dead row says %q: %v", want, reasons)
		}
	}
}
