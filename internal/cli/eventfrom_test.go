package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
	"github.com/heraldhq/herald/store"
)

// Rule: a projection's event_from that names a path and a header for one
// attribute, or a path that is not a singular JSONPath query, is refused
// by `herald config check` (and so at `herald run`'s load) with exit 2 and
// the key path.
func TestConfigCheckRefusesBadEventFrom(t *testing.T) {
	dir := t.TempDir()
	for entry, want := range map[string]string{
		`{id: {path: $.eventId, header: x-id}}`:        "projections[0].event_from.id: give path or header, not both",
		`{id: {path: $.eventId}, type: {path: "$.["}}`: `projections[0].event_from.type: path "$.["`,
		`{id: {path: "$..eventId"}}`:                   "projections[0].event_from.id: path \"$..eventId\" selects more than one value",
	} {
		cfg := filepath.Join(dir, "herald.yaml")
		yaml := "store: {driver: sqlite, dsn: " + filepath.Join(dir, "h.db") + "}\n" +
			"brokers:\n  out: {type: stdout}\nlanes:\n  - {name: a, destination: x, broker: out}\n" +
			"projections:\n  - name: wall\n    source: {outbox: herald_outbox}\n    statements: [\"SELECT 1\"]\n" +
			"    event_from: " + entry + "\n"
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, e := cliRun(t, "config", "check", "--config", cfg); code != 2 || !strings.Contains(e, want) {
			t.Errorf("event_from %s: exit %d, want 2 naming %q:\n%s%s", entry, code, want, out, e)
		}
	}
}

// Rule: under `herald run`, a configured projection with event_from reads
// the event id and tenant from the body: events Herald relays from its
// outbox and the same bodies published raw by another producer on the
// same RocketMQ topic are applied once each; a raw message without the id
// goes dead naming the path, and the projection goes on.
func TestRunProjectionEventFrom(t *testing.T) {
	c, err := rmqfake.New(rmqfake.Options{MaxLongPoll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, `store: {driver: sqlite, dsn: `+filepath.Join(dir, "h.db")+`}
brokers:
  mq: {type: rocketmq, name_servers: ["`+c.NameServer()+`"], send_timeout: 2s}
lanes:
  - {name: wallet, table: main_outbox, broker: mq, destination: wallet_topic, poll_interval: 50ms}
projections:
  - name: from_body
    source: {broker: mq, destination: wallet_topic}
    event_from: {id: {path: $.eventId}, tenant: {path: $.appCode}}
    statements: ["INSERT INTO seen (id, tenant, n) VALUES (:event.id, :event.tenant, :payload.n)"]
`)
	s := openStore(t, dir)
	if err := s.Migrate(context.Background(), "main_outbox"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec("CREATE TABLE seen (id TEXT NOT NULL, tenant TEXT NOT NULL, n INTEGER NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	bodies := make([][]byte, 10)
	evs := make([]herald.Event, len(bodies))
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"eventId":"ev-%d","appCode":"voice","n":%d}`, i, i)
		evs[i] = herald.Event{ID: fmt.Sprintf("ev-%d", i), Topic: "wallet", Type: "WalletGiftDebited", Tenant: "voice",
			Payload: bodies[i]}
	}
	enqueue(t, s, "main_outbox", evs...)
	publishRaw(t, c.NameServer(), "wallet_topic", append(bodies, []byte(`{"appCode":"voice","n":99}`))...)
	run := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 60*time.Second, "all 21 messages acked by the projection", func() bool {
		var n int64
		for q := range 4 {
			off, _ := c.CommittedOffset("from_body", "wallet_topic", q)
			n += off
		}
		return n == 21
	})
	run.terminate(t)
	var rows, ids, voice, dead int
	err = s.DB().QueryRow("SELECT COUNT(*), COUNT(DISTINCT id), SUM(tenant = 'voice') FROM seen").Scan(&rows, &ids, &voice)
	if err != nil || rows != 10 || ids != 10 || voice != 10 {
		t.Errorf("[once per body id] %d rows, %d ids, %d of tenant voice (%v); want 10 of each", rows, ids, voice, err)
	}
	err = s.DB().QueryRow(`SELECT COUNT(*) FROM herald_projection_events WHERE projection = 'from_body' AND state = 'dead'
  AND last_error LIKE '%event id from $.eventId: the body has no value there%'`).Scan(&dead)
	if err != nil || dead != 1 {
		t.Errorf("[dead with the path] %d dead rows naming $.eventId (%v), want 1", dead, err)
	}
}

// enqueue writes evs to table in one transaction.
func enqueue(t *testing.T, s store.Store, table string, evs ...herald.Event) {
	t.Helper()
	ob, err := herald.NewOutbox(herald.OutboxConfig{Table: table, Dialect: s.Dialect()})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Enqueue(context.Background(), s.DB(), evs...); err != nil {
		t.Fatal(err)
	}
}

// publishRaw sends bodies to topic with the RocketMQ client alone, as a
// producer other than Herald does: no CloudEvents properties.
func publishRaw(t *testing.T, nameServer, topic string, bodies ...[]byte) {
	t.Helper()
	prod, err := rmq.NewProducer(producer.WithNameServer([]string{nameServer}), producer.WithGroupName("raw_producer"),
		producer.WithInstanceName("raw-"+herald.NewID()), producer.WithRetry(0))
	if err == nil {
		err = prod.Start()
	}
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Shutdown() //nolint:errcheck // a test producer
	for _, b := range bodies {
		if _, err := prod.SendSync(context.Background(), primitive.NewMessage(topic, b)); err != nil {
			t.Fatal(err)
		}
	}
}
