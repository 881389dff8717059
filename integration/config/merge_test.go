package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/stdout"
	. "github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/store/mysql/binlog"
)

// A file is laid over the embedded defaults: it may set a single key.
func TestFileMergesOverDefaults(t *testing.T) {
	t.Run("admin only", func(t *testing.T) {
		f := mustParse(t, "admin: {addr: \"127.0.0.1:9999\"}\n")
		if f.Admin.Addr != "127.0.0.1:9999" || f.Store.DSN != "herald.db" || len(f.Lanes) != 1 ||
			f.Brokers["default"] == nil || as[*nats.BrokerConfig](f.Brokers["default"].Config).Embedded == nil {
			t.Fatalf("defaults not kept under one key: %+v", f)
		}
	})
	t.Run("lanes only", func(t *testing.T) {
		f := mustParse(t, "lanes:\n  - {name: wallet, destination: \"w.{event_type}\"}\n")
		if len(f.Lanes) != 1 || f.Lanes[0].Name != "wallet" || f.Lanes[0].Broker != "default" {
			t.Fatalf("lane must replace the default lane and use the default broker: %+v", f.Lanes)
		}
	})
	t.Run("one nested key", func(t *testing.T) {
		f := mustParse(t, "brokers:\n  default:\n    embedded: {port: 4300}\n")
		e := as[*nats.BrokerConfig](f.Brokers["default"].Config).Embedded
		if e.Port != 4300 || e.Dir != "herald-data" || as[*nats.BrokerConfig](f.Brokers["default"].Config).Stream != "HERALD" {
			t.Fatalf("nested key not merged: %+v", e)
		}
	})
	t.Run("another driver replaces the store", func(t *testing.T) {
		f := mustParse(t, "store: {driver: mysql, dsn: \"root@tcp(127.0.0.1:3306)/test\"}\n")
		if f.Store.Driver != "mysql" || as[*binlog.Config](f.Store.Config) == nil {
			t.Fatalf("store: %+v", f.Store)
		}
		_, err := parse([]byte("store: {driver: postgres}\n"), "t.yaml")
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "store.dsn: is required") {
			t.Fatalf("a postgres store must not inherit the SQLite file name: %v", err)
		}
	})
	t.Run("own broker and lanes start no embedded server", func(t *testing.T) {
		f := mustParse(t, "brokers:\n  events: {type: stdout}\nlanes:\n  - {name: a, destination: x}\n")
		if _, ok := f.Brokers["default"]; ok || f.Lanes[0].Broker != "events" {
			t.Fatalf("brokers %v, lane broker %q", f.Brokers, f.Lanes[0].Broker)
		}
	})
	t.Run("no lanes: projections alone, or refused", func(t *testing.T) {
		// A process that projects beside relays configured elsewhere: a
		// default lane would relay herald_outbox to the embedded server.
		const proj = "projections:\n  - {name: p, source: %s, statements: [\"SELECT 1\"]}\n"
		for _, tc := range []struct{ file, broker string }{
			{"brokers:\n  mq: {type: nats, url: \"nats://127.0.0.1:4222\", stream: EV}\n" +
				strings.ReplaceAll(proj, "%s", "{broker: mq, destination: ev.x}"), "mq"},
			{strings.ReplaceAll(proj, "%s", "{outbox: herald_outbox}"), ""},
			{"lanes: []\n" + strings.ReplaceAll(proj, "%s", "{outbox: herald_outbox}"), ""},
		} {
			f := mustParse(t, tc.file)
			_, mq := f.Brokers["mq"]
			if len(f.Lanes) != 0 || f.Brokers["default"] != nil || mq != (tc.broker == "mq") {
				t.Errorf("%s: lanes %+v, brokers %v; want no lane and no default broker", tc.file, f.Lanes, f.Brokers)
			}
		}
		f := mustParse(t, strings.ReplaceAll(proj, "%s", "{broker: default, destination: herald.x}"))
		if len(f.Lanes) != 0 || f.Brokers["default"] == nil {
			t.Errorf("a projection reading the embedded broker keeps it: lanes %+v, brokers %v", f.Lanes, f.Brokers)
		}
		_, err := parse([]byte("brokers:\n  mq: {type: stdout}\n"), "t.yaml")
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "lanes: the file defines brokers of its own (mq) and no lanes") {
			t.Errorf("brokers of its own, no lanes: %v; want it refused (the default lane would use the embedded server)", err)
		}
		if _, err := parse([]byte("lanes: []\n"), "t.yaml"); !errors.Is(err, ErrInvalid) ||
			!strings.Contains(err.Error(), "at least one lane (or projection) is required") {
			t.Errorf("no lane and no projection: %v", err)
		}
	})
	t.Run("a broker that names its type replaces the default", func(t *testing.T) {
		f := mustParse(t, "brokers:\n  default: {type: nats, url: \"nats://127.0.0.1:4222\", stream: EV}\n")
		if n := as[*nats.BrokerConfig](f.Brokers["default"].Config); n.Embedded != nil || n.Stream != "EV" || n.CreateStream {
			t.Fatalf("a nats broker with a url must not inherit the embedded server: %+v", n)
		}
		f = mustParse(t, "brokers:\n  default: {type: stdout}\n")
		if as[*stdout.BrokerConfig](f.Brokers["default"].Config) == nil || as[*nats.BrokerConfig](f.Brokers["default"].Config) != nil {
			t.Fatalf("broker of another type must replace the default: %+v", f.Brokers["default"])
		}
	})
}

// Errors name the key path, suggest the right key and point at the line.
func TestErrorsNameThePathAndTheFix(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"misspelt lane key":  {"lanes:\n  - name: x\n    batchsize: 3\n", "line 3: lanes[0].batchsize: unknown key, did you mean batch_size?"},
		"misspelt broker":    {"brokers:\n  default:\n    strem: X\n", "line 3: brokers.default.strem: unknown key, did you mean stream?"},
		"kafka key":          {"brokers:\n  k: {type: kafka, brokers: [a:1], clientid: h}\nlanes: [{name: a, broker: k, destination: x}]\n", "brokers.k.clientid: unknown key, did you mean client_id?"},
		"no suggestion":      {"colour: red\n", "line 1: colour: unknown key"},
		"bad indent line":    {"lanes:\n  - name: x\n   table: y\n", "line 3: did not find expected '-' indicator"},
		"wrong type path":    {"lanes:\n  - name: x\n    batch_size: many\n", "line 3: lanes[0].batch_size: cannot unmarshal"},
		"not a mapping":      {"- a\n- b\n", "must be a mapping of sections"},
		"bad mysql dsn":      {"store: {driver: mysql, dsn: \"bad dsn\"}\n", "store.dsn: not a MySQL DSN"},
		"bad postgres dsn":   {"store: {driver: postgres, dsn: \"postgres://x:99999999/db\"}\n", "store.dsn: not a PostgreSQL DSN"},
		"webhook no secret":  {"brokers:\n  w: {type: webhook}\nlanes: [{name: a, broker: w, destination: \"https://p.example/{topic}\"}]\n", "brokers.w: webhook: secret: required"},
		"webhook bad secret": {"brokers:\n  w: {type: webhook, secret: hunter2}\nlanes: [{name: a, broker: w, destination: \"https://p.example/{topic}\"}]\n", "want the form whsec_"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parse([]byte(c.yaml), "t.yaml")
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v does not say %q", err, c.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error repeats the secret: %v", err)
			}
		})
	}
}

func mustParse(t *testing.T, yaml string) *File {
	t.Helper()
	f, err := parse([]byte(yaml), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}
