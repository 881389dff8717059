package admin

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/relay"
)

// Rule: herald_commit_to_ack_seconds observes each delivered event from when
// it became due: an event enqueued as due 3 s ago is observed at 3 s or
// more, a delayed event from its available_at, not from its creation.
func TestCommitToAckHistogram(t *testing.T) {
	for _, tc := range []struct {
		name     string
		due      time.Duration // available_at relative to the enqueue
		min, max time.Duration
	}{
		{"due 3s ago", -3 * time.Second, 3 * time.Second, 20 * time.Second},
		{"delayed 1.5s", 1500 * time.Millisecond, 0, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t)
			pub := memory.New(memory.Config{})
			lanes := []relay.Lane{{Name: "main", Table: herald.DefaultTable, Publisher: pub,
				Destination: broker.MustParseTemplate("t"), PollInterval: 20 * time.Millisecond}}
			reg := prometheus.NewRegistry()
			m, err := NewMetrics(reg, st, lanes)
			if err != nil {
				t.Fatal(err)
			}
			startRelay(t, relay.Config{Store: st, Lanes: lanes, Observer: m})
			enqueue(t, st, herald.Event{Topic: "t", Type: "A", AvailableAt: time.Now().Add(tc.due)})

			var h *dto.Histogram
			testenv.WaitFor(t, 10*time.Second, 5*time.Millisecond, "one observation", func() bool {
				h = commitToAck(t, reg, "main")
				return h != nil && h.GetSampleCount() == 1
			})
			got := time.Duration(h.GetSampleSum() * float64(time.Second))
			if got < tc.min || got > tc.max {
				t.Errorf("observed %v, want within [%v, %v]", got, tc.min, tc.max)
			}
		})
	}
}

// commitToAck gathers reg's herald_commit_to_ack_seconds of lane (nil if
// it has none yet).
func commitToAck(t *testing.T, reg *prometheus.Registry, lane string) *dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "herald_commit_to_ack_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "lane" && l.GetValue() == lane {
					return m.GetHistogram()
				}
			}
		}
	}
	return nil
}
