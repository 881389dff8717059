package relay

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/internal/testenv"
	. "github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
)

// plainRow is an outbox row as a program in another language might INSERT
// it, bypassing Enqueue's checks.
type plainRow struct {
	id, tenant, topic, typ, key, headers string
	payload                              []byte
}

func (e *env) insertPlain(rows ...plainRow) {
	e.t.Helper()
	q := e.store.Dialect().Rebind("INSERT INTO " + e.table + " (event_id, tenant, topic, event_type, partition_key, headers, payload)" +
		" VALUES (?, ?, ?, ?, ?, ?, ?)")
	for _, r := range rows {
		if r.headers == "" {
			r.headers = "{}"
		}
		if r.payload == nil {
			r.payload = []byte{}
		}
		_, err := e.store.DB().Exec(q, r.id, r.tenant, r.topic, r.typ, r.key, r.headers, r.payload)
		if err != nil {
			e.t.Fatalf("insert %s: %v", r.id, err)
		}
	}
}

// serverStore opens a store on one of the shared test servers.
type serverStore struct {
	name string
	open func(ctx context.Context) (droppingStore, error)
}

type droppingStore interface {
	store.Store
	store.Dropper
}

// The shared test servers the relay's tests run on beside SQLite.
var (
	onMySQL = serverStore{"mysql", func(ctx context.Context) (droppingStore, error) {
		return mysql.Open(ctx, testenv.MySQLDSN(), mysql.Options{})
	}}
	onPostgres = serverStore{"postgres", func(ctx context.Context) (droppingStore, error) {
		return postgres.Open(ctx, testenv.PostgresDSN(), postgres.Options{})
	}}
)

// newServerEnv is newEnv on a fresh table of a shared test server
// (skipped when it is unreachable, failing under CI=true).
func newServerEnv(t testing.TB, on serverStore) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := on.open(ctx)
	if err != nil {
		testenv.Unreachable(t, on.name, err)
	}
	table := testenv.Name("checks")
	// Ordered and fair lanes run on it too.
	if err := store.MigrateFor(ctx, s, table, store.TableUse{Ordered: true, Tenants: true}); err != nil {
		s.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Drop(context.Background(), table)
		_ = s.Close()
	})
	return &env{t: t, store: s, table: table, pub: memory.New(memory.Config{})}
}

// Rule: a row that no retry can fix (a field Enqueue requires is empty, a
// field the destination needs is empty, headers that are not a JSON object
// of strings, a payload over the lane's max_payload) goes dead on its first
// claim, never reaching the broker, with a reason naming what is wrong;
// the good rows around it are delivered.
// It runs on every store: each reads the headers column its own way.
func TestCarelessRowsDieUnpublished(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testCarelessRows(t, newEnv(t)) })
	for _, on := range []serverStore{onPostgres, onMySQL} {
		t.Run(on.name, func(t *testing.T) { testCarelessRows(t, newServerEnv(t, on)) })
	}
}

func testCarelessRows(t *testing.T, e *env) {
	e.insertPlain(
		plainRow{id: "good", topic: "o", typ: "Good", key: "k"},
		plainRow{id: "no-type", topic: "o", typ: "", key: "k"},
		plainRow{id: "no-topic", topic: "", typ: "Good", key: "k"},
		plainRow{id: "no-key", topic: "o", typ: "Good"},
		plainRow{id: "bad-headers", topic: "o", typ: "Good", key: "k", headers: `{"n":1}`},
		plainRow{id: "big", topic: "o", typ: "Good", key: "k", payload: make([]byte, 102400)},
		plainRow{id: "", topic: "o", typ: "Good", key: "k"},
	)
	e.start(e.lane(func(l *Lane) {
		l.Destination = broker.MustParseTemplate("{topic}.{event_type}.{partition_key}")
		l.MaxPayload = 65536
	}))
	waitFor(t, 5*time.Second, "6 dead, 1 delivered", func() bool {
		st := e.stats()
		return st.Dead == 6 && st.Delivered == 1
	})
	for id, why := range map[string]string{
		"no-type":     "row has an empty event_type",
		"no-topic":    "row has an empty topic",
		"no-key":      "row has an empty partition_key, which the lane's destination needs",
		"bad-headers": `headers is not a JSON object of strings: header "n" is a number`,
		"big":         "payload is 102400 bytes, lane max_payload is 65536",
		"":            "row has an empty event_id",
	} {
		rec := e.get(id)
		if rec.Status != store.StatusDead || rec.Attempts != 1 || !strings.Contains(rec.LastError, why) {
			t.Errorf("row %q: status %s, attempts %d, last_error %q; want dead on the first claim, saying %q",
				id, rec.Status, rec.Attempts, rec.LastError, why)
		}
	}
	if recs := e.pub.Records(); len(recs) != 1 || recs[0].Message.Event.ID != "good" {
		t.Errorf("the broker got %d messages; want only the good row's", len(recs))
	}
}

// Rule: the payload limit applied before publishing is the smaller of the
// lane's max_payload and the broker's, and the reason says which.
func TestPayloadLimitIsTheSmallerOfLaneAndBroker(t *testing.T) {
	for _, tc := range []struct {
		name         string
		lane, broker int
		size         int
		why          string
	}{
		{"lane smaller", 100, 150, 120, "payload is 120 bytes, lane max_payload is 100"},
		{"broker smaller", 170, 150, 160, "payload is 160 bytes, the broker's limit is 150"},
		{"no lane limit", 0, 150, 160, "payload is 160 bytes, the broker's limit is 150"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.pub = memory.New(memory.Config{MaxPayload: tc.broker})
			e.insertPlain(plainRow{id: "big", topic: "o", typ: "Big", payload: make([]byte, tc.size)},
				plainRow{id: "fits", topic: "o", typ: "Small", payload: make([]byte, 50)})
			e.start(e.lane(func(l *Lane) { l.MaxPayload = tc.lane }))
			waitFor(t, 5*time.Second, "big dead, fits delivered", func() bool {
				st := e.stats()
				return st.Dead == 1 && st.Delivered == 1
			})
			if rec := e.get("big"); !strings.Contains(rec.LastError, tc.why) || e.pub.Count("big") != 0 {
				t.Errorf("last_error %q, published %d times; want %q and never published", rec.LastError, e.pub.Count("big"), tc.why)
			}
		})
	}
}

// Rule: on an ordered lane with on_dead park, a row refused before
// publishing holds its key's later rows of the same batch, as a dead head
// does across batches; other keys flow.
func TestRefusedRowParksItsKey(t *testing.T) {
	e := newEnv(t)
	e.pub = memory.New(memory.Config{MaxPayload: 100})
	big := herald.Event{ID: "a-000", Topic: "t", Type: "Big", PartitionKey: "A", Payload: make([]byte, 200)}
	later := herald.Event{ID: "a-001", Topic: "t", Type: "Small", PartitionKey: "A", Payload: []byte("{}")}
	other := herald.Event{ID: "b-000", Topic: "t", Type: "Small", PartitionKey: "B", Payload: []byte("{}")}
	e.enqueue(big, later, other)
	e.start(e.lane(func(l *Lane) { l.Ordering = OrderingKey; l.OnDead = OnDeadPark }))
	waitFor(t, 5*time.Second, "a-000 dead, b-000 delivered", func() bool {
		return e.stats().Dead == 1 && e.pub.Count("b-000") == 1
	})
	// A later claim that delivers a new key has looked at a-001 again.
	e.enqueue(herald.Event{ID: "c-000", Topic: "t", Type: "Small", PartitionKey: "C", Payload: []byte("{}")})
	waitFor(t, 5*time.Second, "c-000 delivered", func() bool { return e.pub.Count("c-000") == 1 })
	// a-001 may be in a claim that is looking at it again right now; it must
	// never be published, delivered or killed.
	if st := e.get("a-001").Status; e.pub.Count("a-001") != 0 || (st != store.StatusPending && st != store.StatusInFlight) {
		t.Fatalf("a-001 went out behind its dead head a-000 (published %d times, status %s)", e.pub.Count("a-001"), st)
	}
}
