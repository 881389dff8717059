package admin

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/relay"
)

// Rule: while a running relay finds its broker unreachable, /readyz is 503
// naming the broker and herald_broker_up is 0; once the broker answers
// again both recover and the outage's length is counted.
func TestReadyzFollowsBrokerOutage(t *testing.T) {
	st := openStore(t)
	pub := memory.New(memory.Config{})
	pub.SetDown(herald.Unavailable(errors.New("connection refused")))
	lanes := []relay.Lane{{Name: "main", Table: herald.DefaultTable, Publisher: pub, Broker: "mem",
		Destination: broker.MustParseTemplate("t"), PollInterval: 20 * time.Millisecond}}
	health := relay.NewHealth()
	reg := prometheus.NewRegistry()
	if err := RegisterHealth(reg, health); err != nil {
		t.Fatal(err)
	}
	srv, err := Listen("127.0.0.1:0", reg, st, lanes, WithHealth(health))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	base := "http://" + srv.Addr()

	startRelay(t, relay.Config{Store: st, Lanes: lanes, Health: health, ProbeInitial: 10 * time.Millisecond,
		ProbeMax: 50 * time.Millisecond})
	enqueue(t, st, herald.Event{Topic: "t", Type: "A"})

	testenv.WaitFor(t, 10*time.Second, 5*time.Millisecond, "/readyz 503 naming the broker", func() bool {
		code, body := get(t, base+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "broker mem unreachable")
	})
	if _, body := get(t, base+"/metrics"); !strings.Contains(body, `herald_broker_up{broker="mem"} 0`) {
		t.Errorf("herald_broker_up must be 0 during the outage:\n%s", body)
	}
	pub.SetDown(nil)
	testenv.WaitFor(t, 10*time.Second, 5*time.Millisecond, "/readyz 200 after the broker is back", func() bool {
		code, _ := get(t, base+"/readyz")
		return code == http.StatusOK
	})
	if _, body := get(t, base+"/metrics"); !strings.Contains(body, `herald_broker_up{broker="mem"} 1`) ||
		strings.Contains(body, `herald_broker_outage_seconds_total{broker="mem"} 0`+"\n") {
		t.Errorf("after the outage herald_broker_up must be 1 and the outage counted:\n%s", body)
	}
}
