package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/stdout"
	. "github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/drivers"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
)

// testDrivers are the herald binary's drivers, which the tests read files with.
var testDrivers = Drivers{Brokers: drivers.Brokers(), Stores: drivers.Stores()}

// parse is Parse with testDrivers.
func parse(data []byte, source string) (*File, error) { return Parse(data, source, testDrivers) }

// as is x as a T, or T's zero value.
func as[T any](x any) T {
	v, _ := x.(T)
	return v
}

// A program that ships fewer drivers reads files with its own lists: an
// entry of a type it does not ship is refused naming the ones it does, and
// a nats entry asking for an embedded server is refused when the program
// links none.
func TestParseWithFewerDrivers(t *testing.T) {
	few := Drivers{Brokers: []broker.Driver{nats.Driver{}, stdout.Driver{}}, Stores: []store.Driver{mysql.Driver{}}}
	const dsn = `store: {driver: mysql, dsn: "root:@tcp(127.0.0.1:3306)/test"}` + "\n"
	for name, c := range map[string]struct{ yaml, want string }{
		"unshipped type": {dsn + "brokers: {k: {type: kafka}}\nlanes: [{name: a, broker: k, destination: x}]\n",
			`broker type "kafka" is not one of [nats stdout]`},
		"no embedded server": {dsn + "lanes: [{name: a, destination: x}]\n",
			"brokers.default: embedded: this program has no embedded NATS server"},
		"unshipped store": {"store: {driver: sqlite, dsn: x.db}\nbrokers: {o: {type: stdout}}\nlanes: [{name: a, broker: o, destination: x}]\n",
			`store.driver: unknown database driver "sqlite" (want mysql)`},
	} {
		_, err := Parse([]byte(c.yaml), name, few)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want ErrInvalid naming %q", name, err, c.want)
		}
	}
	f, err := Parse([]byte(dsn+"brokers: {o: {type: stdout}}\nlanes: [{name: a, broker: o, destination: x}]\n"), "ok", few)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Store.Config.(*mysql.Config); !ok || f.Brokers["o"].Type != "stdout" {
		t.Fatalf("store %+v, brokers %+v", f.Store, f.Brokers)
	}
}

// Every broker driver with a secret hides it from `herald config print`
// (broker.Redactor), and the parsed file keeps it for opening the broker.
func TestPrintHidesEveryBrokersSecret(t *testing.T) {
	const canary = "S3cr3tCanary"
	f, err := parse([]byte(`
store: {driver: mysql, dsn: "root:`+canary+`@tcp(127.0.0.1:3306)/test"}
brokers:
  k: {type: kafka, sasl: {mechanism: PLAIN, username: u, password: `+canary+`}}
  r: {type: rabbitmq, url: "amqp://guest:`+canary+`@127.0.0.1:5672/"}
  d: {type: redis, url: "redis://:`+canary+`@127.0.0.1:6379/0"}
  m: {type: rocketmq, name_servers: ["127.0.0.1:9876"], access_key: a, secret_key: `+canary+`}
  n: {type: nats, url: "nats://u:`+canary+`@127.0.0.1:4222", stream: S}
  q: {type: sqs, access_key_id: a, secret_access_key: `+canary+`}
  s: {type: sns, access_key_id: a, secret_access_key: `+canary+`}
  x: {type: kinesis, access_key_id: a, secret_access_key: `+canary+`}
lanes:
  - {name: a, broker: k, destination: t}
  - {name: b, broker: r, destination: t}
  - {name: c, broker: d, destination: t}
  - {name: e, broker: m, destination: t}
  - {name: f, broker: n, destination: t}
  - {name: g, broker: q, destination: t}
  - {name: h, broker: s, destination: "arn:aws:sns:us-east-1:000000000000:t"}
  - {name: i, broker: x, destination: t}
`), "secrets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Print()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), canary) || strings.Count(string(out), "xxxxx") != 9 {
		t.Fatalf("printed config leaks a secret or hides too few (want 9 xxxxx):\n%s", out)
	}
	if as[*kafka.BrokerConfig](f.Brokers["k"].Config).SASL.Password != canary {
		t.Fatal("Print changed the parsed file's secret")
	}
}

// With no config file, an environment override that makes the defaults
// invalid is a config error (exit 2), not a panic (it panicked before).
func TestLoadDefaultsWithBadEnvironment(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("HERALD_STORE_DRIVER", "pg")
	_, err := Load("", testDrivers)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `store.driver: unknown database driver "pg"`) {
		t.Fatalf("err = %v, want ErrInvalid naming store.driver", err)
	}
}
