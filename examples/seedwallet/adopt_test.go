package seedwallet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker/rocketmq"
	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
	"github.com/heraldhq/herald/examples/seedwallet"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector/projectortest"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// tagMode is one of RocketMQ's tag modes, as Herald's publisher, the old
// worker and the wall's subscription each spell it.
type tagMode struct {
	name    string
	cfg     rocketmq.Config
	oldTag  string   // the old worker's constant tag; "" tags by event type
	subTags []string // the wall's subscription filter
	tagOf   func(eventType string) string
}

var tagModes = []tagMode{
	{name: "constant tag", cfg: rocketmq.Config{TagMode: rocketmq.TagConstant, Tag: "wallet"}, oldTag: "wallet",
		subTags: []string{"wallet"}, tagOf: func(string) string { return "wallet" }},
	{name: "event type tag", cfg: rocketmq.Config{TagMode: rocketmq.TagEventType},
		subTags: []string{seedwallet.WalletGiftDebited}, tagOf: func(t string) string { return t }},
}

// Rule: Herald relays the wallet table as it is to RocketMQ, field for
// field the old worker's message, in both tag modes; the gift wall reads
// the event id from the message body, so the rows the old worker published
// and marked, the rows it published but did not mark (published again by
// Herald), and the rest are each applied once, on SQLite, MariaDB and
// PostgreSQL.
func TestAdoptSeedWallet(t *testing.T) {
	for _, mode := range tagModes {
		t.Run(mode.name, func(t *testing.T) {
			for _, b := range backends {
				t.Run(b.name, func(t *testing.T) { testAdoptSeedWallet(t, b.open(t), mode) })
			}
		})
	}
}

// seed is one test's tables and the rows written to the wallet table.
type seed struct {
	s                   store.Store
	table, wall, ledger string
	types               map[string]string // event id -> type
	want                map[string]int64  // "app/receiver/gift" -> count
	gifts               int
}

func testAdoptSeedWallet(t *testing.T, s store.Store, mode tagMode) {
	ctx := context.Background()
	c, err := rmqfake.New(rmqfake.Options{MaxLongPoll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	sd := newSeed(t, s, 40)
	old, err := seedwallet.StartOldWorker(s.DB(), s.Dialect(), sd.table, []string{c.NameServer()}, mode.oldTag)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Publish(ctx, 10, true); err != nil {
		t.Fatal(err)
	}
	crashed, err := old.Publish(ctx, 5, false) // published, never marked: Herald publishes them again
	if err != nil || len(crashed) != 5 {
		t.Fatalf("old worker: %v, %v", crashed, err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := mode.cfg
	cfg.NameServers, cfg.KeyHeaders = []string{c.NameServer()}, seedwallet.KeyHeaders
	pub, err := rocketmq.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	stopRelay := run(t, relayOf(t, s, seedwallet.Lane(sd.table, pub)).Run)
	testenv.WaitFor(t, time.Minute, 10*time.Millisecond, "every row delivered", func() bool {
		return countRows(t, sd.s, sd.table, "delivered") == len(sd.types)
	})
	stopRelay()
	msgs := c.Messages(seedwallet.Topic)
	checkMessages(t, msgs, sd, crashed, mode)
	sub, err := rocketmq.NewSubscriber(ctx, rocketmq.SubscriberConfig{NameServers: cfg.NameServers,
		Group: "seed_gift_wall", Topic: seedwallet.Topic, Tags: mode.subTags})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	wall, err := seedwallet.NewWall(s, sd.wall, sd.ledger, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var acks atomic.Int32
	stopWall := run(t, func(ctx context.Context) error {
		return wall.Run(ctx, projectortest.CountAcks{Subscriber: sub, N: &acks})
	})
	want := int32(0)
	for _, m := range msgs {
		if m.Tags == mode.subTags[0] {
			want++
		}
	}
	testenv.WaitFor(t, time.Minute, 10*time.Millisecond, fmt.Sprintf("%d messages acked", want), func() bool {
		return acks.Load() >= want
	})
	stopWall()
	sd.checkWall(t)
}

// newSeed creates the wallet table, the gift wall and its ledger on
// tables of their own and writes n rows (write).
func newSeed(t *testing.T, s store.Store, n int) *seed {
	sd := &seed{s: s, table: testenv.Name("wallet_outbox"), wall: testenv.Name("gift_wall"), ledger: testenv.Name("seed_pe")}
	if err := s.MigrateProjections(context.Background(), sd.ledger); err != nil {
		t.Fatal(err)
	}
	return sd.write(t, n)
}

// write creates the wallet table and the gift wall (all three dropped
// when the test ends) and writes n rows, every fourth a recharge.
func (sd *seed) write(t *testing.T, n int) *seed {
	s := sd.s
	sd.types, sd.want = map[string]string{}, map[string]int64{}
	ddl := append(seedwallet.TableDDL(s.Dialect().Name, sd.table), seedwallet.WallDDL(sd.wall))
	for _, q := range ddl {
		if _, err := s.DB().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, tb := range []string{sd.table, sd.wall, sd.ledger} {
			_, _ = s.DB().Exec("DROP TABLE " + tb)
		}
	})
	insert := s.Dialect().Rebind(`INSERT INTO ` + sd.table + ` (app_code, event_id, event_type, transaction_id, command_id,
  user_id, asset_type, available_delta, frozen_delta, payload_json, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, 'GOLD', ?, 0, ?, ?)`)
	for i := range n {
		app, id, typ := []string{"voice", "chat"}[i%2], fmt.Sprintf("%s-%03d", sd.table, i), seedwallet.WalletGiftDebited
		payload := fmt.Sprintf(`{"receiver":"u%d","gift_id":"%s","count":%d}`, i%5, []string{"rose", "lily"}[i%3%2], i%3+1)
		if i%4 == 3 {
			typ, payload = seedwallet.WalletRecharged, `{"amount":50}`
		} else {
			sd.gifts++
			sd.want[fmt.Sprintf("%s/u%d/%s", app, i%5, []string{"rose", "lily"}[i%3%2])] += int64(i%3 + 1)
		}
		sd.types[id] = typ
		if _, err := s.DB().Exec(insert, app, id, typ, "tx-"+id, "cmd-"+id, 1000+i, -(i + 1), payload,
			1_700_000_000_000+int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	return sd
}

// checkMessages checks the topic: each row's message once, the crashed
// rows' twice (the old worker's and Herald's, byte for byte the same body),
// each with its mode's tag.
func checkMessages(t *testing.T, msgs []rmqfake.Message, sd *seed, crashed []string, mode tagMode) {
	t.Helper()
	bodies := map[string][]string{}
	for _, m := range msgs {
		var w struct{ EventID, EventType string }
		if err := json.Unmarshal(m.Body, &w); err != nil {
			t.Fatalf("[body] %s: %v", m.Body, err)
		}
		bodies[w.EventID] = append(bodies[w.EventID], string(m.Body))
		if want := mode.tagOf(sd.types[w.EventID]); m.Tags != want || w.EventType != sd.types[w.EventID] {
			t.Errorf("[tag] %s: tag %q type %q, want %q %q", w.EventID, m.Tags, w.EventType, want, sd.types[w.EventID])
		}
		if want := []string{w.EventID, "tx-" + w.EventID, "cmd-" + w.EventID}; !slices.Equal(m.Keys, want) {
			t.Errorf("[keys] %s: keys %q, want %q (the old worker's)", w.EventID, m.Keys, want)
		}
	}
	if len(msgs) != len(sd.types)+len(crashed) {
		t.Errorf("[duplicates counted] %d messages, want %d rows + %d published twice", len(msgs), len(sd.types), len(crashed))
	}
	for _, id := range crashed {
		if b := bodies[id]; len(b) != 2 || b[0] != b[1] {
			t.Errorf("[field for field] %s published as %q, want twice the same body", id, b)
		}
	}
	for id := range sd.types {
		if len(bodies[id]) == 0 {
			t.Errorf("[every row] %s never published", id)
		}
	}
}

// checkWall compares the wall with the gifts written, and the ledger with
// one done row per gift.
func (sd *seed) checkWall(t *testing.T) {
	t.Helper()
	rows, err := sd.s.DB().Query("SELECT app_code, user_id, gift_id, total_count FROM " + sd.wall)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]int64{}
	for rows.Next() {
		var app, user, gift string
		var n int64
		if err := rows.Scan(&app, &user, &gift, &n); err != nil {
			t.Fatal(err)
		}
		got[app+"/"+user+"/"+gift] = n
	}
	if fmt.Sprint(got) != fmt.Sprint(sd.want) {
		t.Errorf("[each gift once] wall %v, want %v", got, sd.want)
	}
	st, err := sd.s.ProjectionStats(context.Background(), sd.ledger, "seed_gift_wall")
	if err != nil || len(st) != 1 || st[0].Done != int64(sd.gifts) || st[0].Dead+st[0].Failed != 0 {
		t.Errorf("[one ledger] %+v, %v; want %d done", st, err, sd.gifts)
	}
}

func relayOf(t *testing.T, s store.Store, lanes ...relay.Lane) *relay.Relay {
	t.Helper()
	r, err := relay.New(relay.Config{Store: s, Lanes: lanes, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// run runs fn until the returned stop is called (or the test ends).
func run(t *testing.T, fn func(ctx context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fn(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("stopped by itself: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}
