package relay

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/rocketmq"
	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
	. "github.com/heraldhq/herald/relay"
)

// walletHeaders carry the wallet row's ids and asset as message headers,
// the ids then RocketMQ keys (key_headers) and the asset part of the topic.
var walletHeaders = map[string]string{"transactionId": "transaction_id", "commandId": "command_id", "assetType": "asset_type"}

// walletTags are the tags of the wallet rows' messages in each tag mode.
var walletTags = map[string]string{rocketmq.TagConstant: "WALLET_EVENT", rocketmq.TagEventType: "WalletGiftDebited",
	rocketmq.TagHeader: "GOLD"}

// Rule: the wallet service's RocketMQ message is produced from its own
// table field for field: the body template's JSON object, keys = event id,
// transaction id, command id (columns carried as headers, then
// key_headers), the tag constant, the event type or a column (tag_mode
// header), the topic from a column; and `herald lane preview`'s mapping of a row (read without
// claiming or changing it) is the message rmqfake then stores.
func TestAdoptRocketMQWalletMessage(t *testing.T) {
	for _, db := range adoptDBs {
		for _, mode := range []string{rocketmq.TagConstant, rocketmq.TagEventType, rocketmq.TagHeader} {
			t.Run(db.name+"/"+mode, func(t *testing.T) { testAdoptRocketMQ(t, db, mode) })
		}
	}
}

func testAdoptRocketMQ(t *testing.T, db adoptDB, tagMode string) {
	c, err := rmqfake.New(rmqfake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cfg := rocketmq.Config{NameServers: []string{c.NameServer()}, TagMode: tagMode, SendTimeout: time.Second,
		KeyHeaders: []string{"transactionId", "commandId"}}
	cfg.Tag, cfg.TagHeader = walletTags[rocketmq.TagConstant], "assetType"
	w := newWallet(t, db)
	ids := w.insert("rmq", "WalletGiftDebited", walletUsers, 5)
	l := w.lane(nil)
	l.Body, l.HeaderColumns = walletBody, walletHeaders
	l.Destination = broker.MustParseTemplate("wallet_events_{header.assetType}")

	previews := previewWallet(t, w, l, &rocketmq.BrokerConfig{Config: cfg})
	pub, err := rocketmq.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	l.Publisher = pub
	r := w.runRelay(l)
	waitFor(t, 60*time.Second, "every row delivered", func() bool { return w.countStatus("delivered") == len(ids) })
	r.stop()

	msgs := c.Messages("wallet_events_GOLD")
	if len(msgs) != len(ids) {
		t.Fatalf("rmqfake holds %d messages on wallet_events_GOLD, want %d", len(msgs), len(ids))
	}
	for _, m := range msgs {
		id := m.Keys[0]
		tag := walletTags[tagMode]
		if want := []string{id, "tx-" + id, "cmd-" + id}; m.Tags != tag || !reflect.DeepEqual(m.Keys, want) {
			t.Errorf("%s: tag %q keys %q; want %q %q", id, m.Tags, m.Keys, tag, want)
		}
		if want := walletBodyOf(t, w, id); string(m.Body) != want {
			t.Errorf("%s: body\n got %s\nwant %s", id, m.Body, want)
		}
		p, ok := previews[id]
		switch {
		case !ok:
			t.Errorf("%s: sent but not previewed", id)
		case p.Destination != m.Topic || p.Tag != m.Tags || !slices.Equal(p.Keys, m.Keys) || string(p.Body) != string(m.Body):
			t.Errorf("%s: preview %+v differs from the message sent %+v", id, p, m)
		}
		for k, v := range p.Headers {
			if m.Properties[k] != v {
				t.Errorf("%s: previewed property %s=%q, sent %q", id, k, v, m.Properties[k])
			}
		}
	}
}

// previewWallet previews the lane's messages as `herald lane preview`
// does, and checks that this changed no row.
func previewWallet(t *testing.T, w *wallet, l Lane, bc broker.Previewer) map[string]broker.Preview {
	t.Helper()
	before := w.snapshot()
	msgs, err := Preview(context.Background(), w.store, l, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if after := w.snapshot(); !reflect.DeepEqual(before, after) {
		t.Fatalf("preview changed rows:\nbefore %v\nafter  %v", before, after)
	}
	out := map[string]broker.Preview{}
	for _, m := range msgs {
		if m.Err != nil {
			t.Fatalf("preview of %s: %v", m.Message.Event.ID, m.Err)
		}
		p, err := bc.Preview(m.Message)
		if err != nil {
			t.Fatalf("preview of %s: %v", m.Message.Event.ID, err)
		}
		out[m.Message.Event.ID] = p
	}
	if len(out) != len(before) {
		t.Fatalf("previewed %d messages of %d pending rows", len(out), len(before))
	}
	return out
}

// snapshot is every row's claim state: status, retries, lease and owner.
func (w *wallet) snapshot() map[string]string {
	w.t.Helper()
	rs, err := w.store.DB().Query(w.q(`SELECT event_id, status, retry_count, next_retry_at_ms, lock_until_ms, worker_id FROM {{T}}`))
	if err != nil {
		w.t.Fatal(err)
	}
	defer rs.Close()
	out := map[string]string{}
	for rs.Next() {
		var id, status, worker string
		var retries, next, lock int64
		if err := rs.Scan(&id, &status, &retries, &next, &lock, &worker); err != nil {
			w.t.Fatal(err)
		}
		out[id] = fmt.Sprint(status, retries, next, lock, worker)
	}
	if err := rs.Err(); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// walletBodyOf is the wallet message body of row id, as the wallet
// service's own worker writes it.
func walletBodyOf(t *testing.T, w *wallet, id string) string {
	t.Helper()
	var payload string
	var user, delta int
	if err := w.store.DB().QueryRow(w.q(`SELECT payload_json, user_id, available_delta FROM {{T}} WHERE event_id = ?`), id).
		Scan(&payload, &user, &delta); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"eventId":%q,"eventType":"WalletGiftDebited","appCode":"voice","transactionId":"tx-%s",`+
		`"commandId":"cmd-%s","userId":%d,"assetType":"GOLD","availableDelta":%d,"frozenDelta":0,`+
		`"source":"wallet","payload":%s}`, id, id, id, user, delta, payload)
}
