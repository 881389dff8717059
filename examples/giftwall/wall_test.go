package giftwall_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/natsembed"
	"github.com/heraldhq/herald/examples/giftwall"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// TestGiftWallMatchesLedger runs the whole application on each database:
// traffic for two tenants, the three lanes relaying to an embedded NATS
// server through a broker failing one publish in five, and the gift wall
// projected from NATS. Once all is delivered, the wall equals the ledger
// for every tenant, receiver and gift: nothing lost, nothing applied twice.
func TestGiftWallMatchesLedger(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		a := newApp(t, s, giftwall.Config{LaunchDelay: 100 * time.Millisecond})
		url, stream := startNATS(t)
		pub, err := nats.New(ctx, nats.Config{URL: url, Stream: stream, Subjects: []string{"giftwall.>"}, CreateStream: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pub.Close() })
		flaky, err := giftwall.NewFlaky(pub, 0.2)
		if err != nil {
			t.Fatal(err)
		}
		runRelay(t, s, nil, a.Lanes(flaky, time.Minute)...)
		runProjector(t, a, url, stream)

		if err := a.Seed(ctx, giftwall.DefaultTenants); err != nil {
			t.Fatal(err)
		}
		var st giftwall.TrafficStats
		if err := a.Generate(ctx, giftwall.TrafficConfig{Gifts: 300, Seed: 7}, &st); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "300 gifts were not all delivered and projected", func() bool {
			lane, err := s.Stats(ctx, store.Scope{Table: a.Config().WalletTable})
			if err != nil || lane.Pending+lane.Retrying+lane.InFlight > 0 {
				return false
			}
			ps, err := s.ProjectionStats(ctx, a.Config().ProjectionTable, giftwall.ProjectionName)
			return err == nil && len(ps) == 1 && ps[0].Done+ps[0].Dead == 300
		})
		rep, err := a.Verify(ctx)
		if err != nil || !rep.OK() || rep.Gifts != 300 {
			t.Fatalf("%v, %v", rep, err)
		}
		if flaky.Failed() == 0 || rep.Cells == 0 || st.Events.Load() < 600 {
			t.Fatalf("no failures injected (%d), no cells (%d) or too little traffic (%d events)", flaky.Failed(), rep.Cells, st.Events.Load())
		}
		wall, err := a.Wall.Of(ctx, "aurora", "u01")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range wall {
			if e.TotalCount < 1 || e.LastReceivedAt == 0 || e.Tenant != "aurora" {
				t.Fatalf("wall entry %+v", e)
			}
		}
		t.Logf("%s (%d cells, %d publishes failed on purpose, %d refused, %d duplicate commands)",
			rep, rep.Cells, flaky.Failed(), st.Refused.Load(), st.Duplicates.Load())
	})
}

// TestGiftWallRejectsBadPayload: a payload the wall cannot read is a
// permanent failure (the event goes dead instead of blocking the queue).
func TestGiftWallRejectsBadPayload(t *testing.T) {
	s := backends[0].open(t)
	a := newApp(t, s, giftwall.Config{})
	tx, err := s.DB().Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, body := range []string{"not json", `{"receiver": "", "gift_id": "rose", "count": 1}`} {
		err := a.Wall.Apply(context.Background(), tx, herald.Event{ID: "e1", Type: giftwall.WalletGiftDebited, Payload: []byte(body)})
		if !herald.IsPermanent(err) {
			t.Fatalf("payload %q: %v, want a permanent error", body, err)
		}
	}
}

// startNATS starts an embedded NATS server for the test and returns its
// URL and a stream name of the test's own.
func startNATS(t *testing.T) (url, stream string) {
	t.Helper()
	srv, err := natsembed.Start(natsembed.Config{Dir: filepath.Join(t.TempDir(), "nats"), Port: natsembed.RandomPort})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv.ClientURL(), testenv.Name("GIFTWALL")
}

// runProjector runs the App's gift wall projector on a NATS subscriber of
// the wallet lane's subjects until the test ends.
func runProjector(t *testing.T, a *giftwall.App, url, stream string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := nats.NewSubscriber(ctx, nats.SubscriberConfig{URL: url, Stream: stream, Durable: "gift_wall",
		FilterSubjects: []string{"giftwall.*.wallet." + giftwall.WalletGiftDebited}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	p, err := a.NewProjector(quiet())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx, sub) }()
	t.Cleanup(func() { cancel(); <-done; sub.Close() })
}
