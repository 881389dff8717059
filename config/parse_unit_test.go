package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/stdout"
	"github.com/heraldhq/herald/broker/webhook"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/sqlite"
)

// These unit tests parse with a program's own short driver list (SQLite,
// stdout, webhook), as an embedding program would, so that they load no
// heavy adapter; the suites that parse through every driver live in the
// integration module (integration/config).
var lightDrivers = config.Drivers{
	Brokers: []broker.Driver{stdout.Driver{}, webhook.Driver{}},
	Stores:  []store.Driver{sqlite.Driver{}},
}

const lightBase = "store: {driver: sqlite, dsn: x.db}\nbrokers:\n  b: {type: stdout}\n"

// Rule: a lane given only a name and a destination gets every default,
// and what the file sets is kept.
func TestUnitLaneDefaultsAndSettings(t *testing.T) {
	f, err := config.Parse([]byte(lightBase+"lanes:\n  - {name: a, destination: \"x.{event_type}\"}\n  - {name: b, destination: y, batch_size: 500, concurrency: 4}\n"),
		"t.yaml", lightDrivers)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Print()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"batch_size: 100\n", "concurrency: 1\n", "poll_interval: 1s\n", "lease: 9s\n",
		"batch_size: 500\n", "concurrency: 4\n", "driver: sqlite\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("printed config lacks %q:\n%s", want, out)
		}
	}
	if _, err := f.Lane("nosuch"); err == nil || errors.Is(err, config.ErrInvalid) {
		t.Fatalf("unknown lane: %v, want an UnknownLaneError that is not a config error", err)
	}
}

// Rule: bad input is refused as ErrInvalid naming the key path, with the
// short driver list as with the full one; a driver the program does not
// ship is named with the ones it does.
func TestUnitBadInputNamesTheKey(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"unknown lane key":      {lightBase + "lanes: [{name: a, destination: x, colour: red}]\n", "lanes[0].colour: unknown key"},
		"batch out of range":    {lightBase + "lanes: [{name: a, destination: x, batch_size: 20000}]\n", "lanes[0] (a).batch_size: 20000 is out of range"},
		"fair with a tenant":    {lightBase + "lanes: [{name: a, destination: x, tenant: t1, fair_tenants: true}]\n", "lanes[0] (a).fair_tenants: shares batches"},
		"bad template":          {lightBase + "lanes: [{name: a, destination: \"x.{colour}\"}]\n", "unknown placeholder {colour}"},
		"broker not shipped":    {"brokers:\n  n: {type: nats, stream: X}\nlanes: [{name: a, destination: x}]\n", `broker type "nats"`},
		"store not shipped":     {"store: {driver: postgres, dsn: \"postgres://x\"}\nbrokers:\n  b: {type: stdout}\nlanes: [{name: a, destination: x}]\n", "store.driver"},
		"webhook not a URL":     {"brokers:\n  w: {type: webhook, secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}\nlanes: [{name: a, destination: \"partner/{event_type}\"}]\n", "absolute http(s) URL"},
		"lease under a timeout": {lightBase + "lanes: [{name: a, destination: x, publish_timeout: 3s, lease: 1s}]\n", "lease"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := config.Parse([]byte(c.yaml), "t.yaml", lightDrivers)
			if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, c.want)
			}
		})
	}
}
