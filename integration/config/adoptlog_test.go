package config

import (
	"errors"
	. "github.com/heraldhq/herald/config"
	"strings"
	"testing"
)

// Rule: a log lane on a mapped table loads with a retry status of its own
// and on_delivered mark or leave; the settings it cannot serve are refused
// with the key path.
func TestAdoptLogLaneSettings(t *testing.T) {
	logLane := strings.Replace(walletLane, "time_unit: epoch_ms", "time_unit: epoch_ms\n    source: log", 1)
	for _, mode := range []string{"", "\n    on_delivered: mark", "\n    on_delivered: leave"} {
		if _, err := parse([]byte(logLane+mode), "test.yaml"); err != nil {
			t.Errorf("source: log%s: %v", mode, err)
		}
	}
	key := "lanes[0] (wallet)."
	cases := map[string]struct{ yaml, want string }{
		"retry is the first pending value": {strings.Replace(logLane, "pending: [pending, retryable]", "pending: pending", 1),
			key + `statuses.retry: a log lane needs a retry status other than the first pending value "pending"`},
		"delete on a mapped table": {logLane + "    on_delivered: delete\n",
			key + "on_delivered: delete is not supported on a mapped table"},
		"leave on a polling lane": {walletLane + "    on_delivered: leave\n",
			key + "on_delivered: leave needs source: log"},
		"leave on Herald's own table": {"store: {driver: sqlite, dsn: x.db}\nbrokers:\n  b: {type: stdout}\nlanes:\n" +
			"  - {name: own, destination: x, source: log, on_delivered: leave}\n",
			"lanes[0] (own).on_delivered: leave needs a mapped table"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parse([]byte(c.yaml), "test.yaml")
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrInvalid mentioning %q", err, c.want)
			}
		})
	}
}
