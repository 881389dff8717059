package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/rabbitmq"
	"github.com/heraldhq/herald/broker/redis"
	"github.com/heraldhq/herald/broker/rocketmq"
	"github.com/heraldhq/herald/broker/webhook"
	. "github.com/heraldhq/herald/config"
)

func TestDefaultsAreValid(t *testing.T) {
	f := Defaults(testDrivers)
	if f.Store.Driver != "sqlite" || f.Store.DSN != "herald.db" {
		t.Fatalf("default store = %+v, want sqlite herald.db", f.Store)
	}
	b := f.Brokers["default"]
	if n := as[*nats.BrokerConfig](b.Config); n == nil || n.Embedded == nil || n.Embedded.Port == 4222 {
		t.Fatalf("default broker must be an embedded NATS off port 4222, got %+v", b)
	}
	if len(f.Lanes) != 1 || f.Lanes[0].Table != "herald_outbox" || f.Lanes[0].Destination.String() != "herald.{topic}" {
		t.Fatalf("default lanes = %+v", f.Lanes)
	}
}

func TestParseFullFile(t *testing.T) {
	f, err := parse([]byte(`
store: {driver: mysql, dsn: "root@tcp(127.0.0.1:3306)/test"}
brokers:
  events: {type: nats, url: "nats://127.0.0.1:4222", stream: EVENTS}
lanes:
  - name: room
    table: room_outbox
    broker: events
    destination: "room.{event_type}"
    include_types: [RoomEntered]
    max_payload: 65536
    ordering: key
    on_dead: skip
    concurrency: 4
    batch_size: 100
    poll_interval: 1s
    publish_timeout: 3s
    retry: {strategy: exponential_backoff, initial: 5s, max: 5m, max_attempts: 10, jitter: full}
    discard_after: 0
    retention: {delivered: 24h, dead: 720h, active: 0}
admin: {addr: "127.0.0.1:8080"}
`), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l := f.Lanes[0]
	if l.Retry.Max != 5*time.Minute || l.Retention.Dead != 720*time.Hour || l.Ordering != "key" {
		t.Fatalf("lane parsed wrong: %+v", l)
	}
	// The relay applies max_payload to rows written by plain SQL too.
	if l.MaxPayload != 65536 {
		t.Fatalf("relay lane max_payload = %d, want the file's 65536", l.MaxPayload)
	}
	// Unset settings hold their defaults, as the relay would apply them.
	if l.Lease != 9*time.Second || l.Retention.Interval != time.Minute || l.Retention.BatchSize != 1000 {
		t.Fatalf("lane defaults not applied: lease %s, retention %+v", l.Lease, l.Retention)
	}
}

// Each bad input must be an ErrInvalid whose text names the key at fault.
func TestBadConfigNamesTheKey(t *testing.T) {
	base := "store: {driver: sqlite, dsn: x.db}\nbrokers:\n  b: {type: stdout}\n"
	cases := map[string]struct{ yaml, want string }{
		"unknown top key":        {base + "lanes: [{name: a, destination: x}]\nbogus: 1\n", "line 5: bogus: unknown key"},
		"unknown lane key":       {base + "lanes: [{name: a, destination: x, colour: red}]\n", "lanes[0].colour: unknown key"},
		"unknown broker key":     {"brokers:\n  b: {type: stdout, stream: X}\nlanes: [{name: a, destination: x}]\n", "brokers.b.stream: unknown key"},
		"unknown broker type":    {"brokers:\n  b: {type: carrier_pigeon}\nlanes: [{name: a, destination: x}]\n", `broker type "carrier_pigeon"`},
		"unknown strategy":       {base + "lanes: [{name: a, destination: x, retry: {strategy: linear}}]\n", "retry.strategy"},
		"bad duration":           {base + "lanes: [{name: a, destination: x, poll_interval: soon}]\n", `"soon" is not a duration`},
		"bad source":             {base + "lanes: [{name: a, destination: x, source: binlog}]\n", `.source: "binlog" is not poll or log`},
		"bad identifier":         {base + "lanes: [{name: a, destination: x, table: \"t; DROP TABLE x\"}]\n", "table:"},
		"unknown broker":         {base + "lanes: [{name: a, destination: x, broker: nope}]\n", `broker: unknown broker "nope"`},
		"bad template":           {base + "lanes: [{name: a, destination: \"x.{colour}\"}]\n", "unknown placeholder {colour}"},
		"bad driver":             {"store: {driver: oracle, dsn: x}\nbrokers:\n  b: {type: stdout}\nlanes: [{name: a, destination: x}]\n", "store.driver"},
		"bad ordering":           {base + "lanes: [{name: a, destination: x, ordering: total}]\n", "ordering"},
		"bad on_delivered":       {base + "lanes: [{name: a, destination: x, source: log, on_delivered: drop}]\n", `on_delivered: "drop" is not one of mark, delete`},
		"delete on polling":      {base + "lanes: [{name: a, destination: x, on_delivered: delete}]\n", "on_delivered: delete needs source: log"},
		"lease under timeout":    {base + "lanes: [{name: a, destination: x, publish_timeout: 3s, lease: 1s}]\n", "lease"},
		"duplicate lane":         {base + "lanes: [{name: a, destination: x}, {name: a, destination: y}]\n", "defined twice"},
		"no lanes":               {base + "lanes: []\n", "lanes: at least one lane"},
		"negative batch":         {base + "lanes: [{name: a, destination: x, batch_size: -1}]\n", "batch_size"},
		"projection workers":     {base + "lanes: [{name: a, destination: x}]\nprojections: [{name: p, source: {outbox: herald_outbox}, statements: [\"SELECT 1\"], workers: -1}]\n", "projections[0].workers: -1 is negative"},
		"projection jitter":      {base + "lanes: [{name: a, destination: x}]\nprojections: [{name: p, source: {outbox: herald_outbox}, statements: [\"SELECT 1\"], retry: {jitter: some}}]\n", `projections[0].retry.jitter: "some" is not one of`},
		"projection unknown key": {base + "lanes: [{name: a, destination: x}]\nprojections: [{name: p, source: {outbox: herald_outbox}, statements: [\"SELECT 1\"], lease: 1m}]\n", "projections[0].lease: unknown key"},
		"fair with a tenant":     {base + "lanes: [{name: a, destination: x, tenant: t1, fair_tenants: true}]\n", "lanes[0] (a).fair_tenants: shares batches"},
		"nats without stream":    {"brokers:\n  b: {type: nats}\nlanes: [{name: a, destination: x}]\n", "brokers.b: stream is required"},
		"kafka unknown key":      {"brokers:\n  k: {type: kafka, brokers: [\"127.0.0.1:9092\"], stream: X}\nlanes: [{name: a, destination: x}]\n", "brokers.k.stream: unknown key"},
		"kafka bad sasl":         {"brokers:\n  k: {type: kafka, sasl: {mechanism: MD5, username: u, password: p}}\nlanes: [{name: a, destination: x}]\n", "brokers.k:"},
		"webhook not a URL":      {"brokers:\n  w: {type: webhook, secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}\nlanes: [{name: a, destination: \"partner/{event_type}\"}]\n", "absolute http(s) URL"},
		"rocketmq bad tag mode":  {"brokers:\n  r: {type: rocketmq, name_servers: [\"127.0.0.1:9876\"], group: g, tag_mode: colour}\nlanes: [{name: a, destination: x}]\n", "brokers.r:"},
		"hostile unicode name":   {base + "lanes: [{name: a, destination: x, table: \"оutbox\"}]\n", "table:"},
		"otlp not a URL":         {base + "lanes: [{name: a, destination: x}]\ntracing: {otlp_endpoint: \"collector:4318\"}\n", "tracing.otlp_endpoint"},
		"sample ratio above 1":   {base + "lanes: [{name: a, destination: x}]\ntracing: {sample_ratio: 2}\n", "tracing.sample_ratio: 2 is not between 0 and 1"},
		"admin addr no port":     {base + "lanes: [{name: a, destination: x}]\nadmin: {addr: \"9464\"}\n", `admin.addr: "9464" is not host:port or off`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parse([]byte(c.yaml), "test.yaml")
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func TestEnvOverridesStore(t *testing.T) {
	t.Setenv("HERALD_STORE_DSN", "other.db")
	f := Defaults(testDrivers)
	if f.Store.DSN != "other.db" {
		t.Fatalf("HERALD_STORE_DSN not applied: %q", f.Store.DSN)
	}
}

// Every broker type reads its own keys from the YAML.
func TestEveryBrokerTypeParses(t *testing.T) {
	f, err := parse([]byte(`
brokers:
  k:  {type: kafka, brokers: ["127.0.0.1:9092"], client_id: herald}
  r:  {type: rabbitmq, url: "amqp://guest:guest@127.0.0.1:5672/", exchange: events}
  rd: {type: redis, url: "redis://127.0.0.1:6379/0", max_len: 1000}
  mq: {type: rocketmq, name_servers: ["127.0.0.1:9876"], group: herald, tag_mode: event_type, key_headers: [transaction_id]}
  w:  {type: webhook, secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, max_per_host: 4, timeout: 5s}
lanes:
  - {name: a, broker: k, destination: "t.{topic}"}
  - {name: b, broker: r, destination: "{event_type}"}
  - {name: c, broker: rd, destination: "s:{tenant}"}
  - {name: d, broker: mq, destination: "{topic}"}
  - {name: e, broker: w, destination: "https://partner.example/hooks/{event_type}"}
`), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := f.Brokers
	if as[*kafka.BrokerConfig](b["k"].Config).ClientID != "herald" || as[*rabbitmq.BrokerConfig](b["r"].Config).Exchange != "events" || as[*redis.BrokerConfig](b["rd"].Config).MaxLen != 1000 ||
		as[*rocketmq.BrokerConfig](b["mq"].Config).TagMode != "event_type" || as[*webhook.BrokerConfig](b["w"].Config).Timeout != 5*time.Second {
		t.Fatalf("broker keys not read: %+v %+v %+v %+v %+v", as[*kafka.BrokerConfig](b["k"].Config), as[*rabbitmq.BrokerConfig](b["r"].Config), as[*redis.BrokerConfig](b["rd"].Config), as[*rocketmq.BrokerConfig](b["mq"].Config), as[*webhook.BrokerConfig](b["w"].Config))
	}
}

// Lane settings are declared once (relay.Lane): their errors carry the
// key path, and `herald config print` shows their effective defaults
// (it printed 0 for every unset one before).
func TestLaneSettingsFromRelay(t *testing.T) {
	_, err := parse([]byte("lanes: [{name: a, destination: x, batch_size: 20000, lease: 2s}]\n"), "t.yaml")
	for _, want := range []string{"lanes[0] (a).batch_size: 20000 is out of range [0, 10000]",
		"lanes[0] (a).lease: 2s must be longer than publish_timeout 3s"} {
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want ErrInvalid with %q", err, want)
		}
	}
	out, err := Defaults(testDrivers).Print()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"concurrency: 1\n", "batch_size: 100\n", "poll_interval: 1s\n", "publish_timeout: 3s\n",
		"lease: 9s\n", "max_attempts: 10\n", "jitter: full\n", "ordering: none\n", "on_dead: park\n", "on_delivered: mark\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("printed defaults lack %q:\n%s", want, out)
		}
	}
}
