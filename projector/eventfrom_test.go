package projector_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/projector/projectortest"
	"github.com/heraldhq/herald/store"
)

// TestEventFromRefusesBadConfig: a path and a header for one attribute, a
// path that does not parse, and one that selects many values are config
// errors naming the attribute.
func TestEventFromRefusesBadConfig(t *testing.T) {
	s := projectortest.SQLite(t.TempDir() + "/f.db")(t)
	h := func(context.Context, *sql.Tx, herald.Event) error { return nil }
	for want, ef := range map[string]projector.EventFrom{
		"event_from.id: give path or header, not both": {ID: projector.Field{Path: "$.id", Header: "x-id"}},
		"event_from.tenant: path \"$.[\"":              {Tenant: projector.Field{Path: "$.["}},
		"event_from.key: path \"$.keys[*]\" selects":   {Key: projector.Field{Path: "$.keys[*]"}},
	} {
		_, err := projector.New(projector.Config{Settings: projector.Settings{Name: "x", EventFrom: ef}, Store: s, Handler: h})
		if !errors.Is(err, projector.ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: got %v, want ErrConfig naming %q", ef, err, want)
		}
	}
}

// TestEventFromHeaders: the id and tenant from named headers and the time
// from the body; two messages with one header id (different broker ids)
// are applied once; a message without the header goes dead naming it, and
// after a replay it goes dead again instead of being applied.
func TestEventFromHeaders(t *testing.T) {
	forEachBackend(t, func(t *testing.T, f *fixture) {
		msg := func(brokerID, headerID, key string) herald.Event {
			ev := projectortest.Event(key, 1)
			ev.ID, ev.Headers = brokerID, map[string]string{"x-tenant": "t9"}
			ev.Payload = []byte(`{"key":"` + key + `","seq":1,"ts":1700000000123}`)
			if headerID != "" {
				ev.Headers["x-event-id"] = headerID
			}
			return ev
		}
		var mu sync.Mutex
		var seen []herald.Event
		cfg := f.config(func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
			mu.Lock()
			seen = append(seen, ev)
			mu.Unlock()
			return f.model.Bump(ctx, tx, ev)
		})
		cfg.SweepInterval = 20 * time.Millisecond
		cfg.EventFrom = projector.EventFrom{ID: projector.Field{Header: "x-event-id"},
			Tenant: projector.Field{Header: "x-tenant"}, Time: projector.Field{Path: "$.ts"}}
		p, err := projector.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		src := newSliceSource(msg("pos-1", "ev-1", "hdr"), msg("pos-2", "ev-1", "hdr"), msg("pos-3", "", "nohdr"))
		stop := run(t, p, src)
		src.WaitAcks(t, 3)
		if n := f.model.Count(t, f.s.DB(), "hdr"); n != 1 {
			t.Errorf("[one id, one application] applied %d times", n)
		}
		mu.Lock()
		if len(seen) != 1 || seen[0].ID != "ev-1" || seen[0].Tenant != "t9" || seen[0].CreatedAt.UnixMilli() != 1700000000123 {
			t.Errorf("[attributes from the message] the handler saw %+v", seen)
		}
		mu.Unlock()
		dead := f.deadRows(t)
		if len(dead) != 1 || dead[0].EventID != "pos-3" || dead[0].Tenant != "t9" ||
			!strings.Contains(dead[0].LastError, `event id from header "x-event-id": the message has no such header`) {
			t.Fatalf("[dead with the reason] dead rows %+v", dead)
		}
		if n, err := f.s.ReplayProjection(context.Background(), f.table, "count", nil); err != nil || n != 1 {
			t.Fatalf("replay: %d, %v", n, err)
		}
		projectortest.Eventually(t, 10*time.Second, "the replayed event dead again", func() bool {
			st := f.stats()
			return st.Dead == 1 && st.Failed == 0
		})
		stop()
		if n := f.model.Count(t, f.s.DB(), "nohdr"); n != 0 {
			t.Errorf("[never a silent new event] the message without an id was applied %d times", n)
		}
	})
}

func (f *fixture) deadRows(t *testing.T) []store.ProjectionRow {
	t.Helper()
	rows, err := f.s.ListProjection(context.Background(), store.ProjectionListParams{Table: f.table, Projection: "count",
		State: store.ProjectionDead, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
