package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
	"github.com/heraldhq/herald/store"
)

// walletRocketMQConfig is walletConfig (its database at db) relaying to
// RocketMQ at nameServer as the wallet service's worker did: the topic
// from a column, ids as keys, the tag constant, a body template.
func walletRocketMQConfig(db, nameServer string) string {
	return strings.NewReplacer("dsn: wallet.db", "dsn: "+db,
		"out: {type: stdout}", `mq: {type: rocketmq, name_servers: ["`+nameServer+`"], tag_mode: constant, tag: WALLET_EVENT,
    key_headers: [transactionId, commandId]}`,
		"broker: out", "broker: mq", `destination: "wallet.{event_type}"`, `destination: "wallet_events_{header.assetType}"`,
	).Replace(walletConfig) + `    header_columns: {transactionId: transaction_id, commandId: command_id, assetType: asset_type}
    body:
      - {field: eventId, column: event_id}
      - {field: userId, column: user_id}
      - {field: payload, payload: raw}
`
}

// walletRowStates is every wallet row's claim state.
func walletRowStates(t *testing.T, s store.Store) string {
	t.Helper()
	rows, err := s.DB().Query(`SELECT event_id, status, retry_count, next_retry_at_ms, lock_until_ms, worker_id
FROM wallet_outbox ORDER BY event_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, status, worker string
		var retries, next, lock int64
		if err := rows.Scan(&id, &status, &retries, &next, &lock, &worker); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, id, status, retries, next, lock, worker)
	}
	return b.String()
}

// insertWalletRows writes one wallet row ev-I per next attempt time.
func insertWalletRows(t *testing.T, s store.Store, nextMs ...string) {
	t.Helper()
	for i, next := range nextMs {
		if _, err := s.DB().Exec(`INSERT INTO wallet_outbox (app_code, event_id, event_type, transaction_id, command_id,
  user_id, asset_type, available_delta, frozen_delta, payload_json, created_at_ms, next_retry_at_ms)
VALUES ('voice', ?, 'WalletGiftDebited', ?, ?, ?, 'GOLD', -1, 0, ?, 0, ?)`,
			fmt.Sprintf("ev-%d", i), fmt.Sprintf("tx-%d", i), fmt.Sprintf("cmd-%d", i), 1000+i, fmt.Sprintf(`{"n":%d}`, i), next); err != nil {
			t.Fatal(err)
		}
	}
}

// Rule: `herald lane preview` prints a mapped lane's next messages as
// RocketMQ would get them (topic from a column, keys, tag, properties,
// body), in claim order and only the due ones, saying why one would not
// be sent, without claiming or changing a row; --json gives the same as JSON.
func TestAdoptLanePreviewMappedTable(t *testing.T) {
	dir := t.TempDir()
	s := walletDB(t, dir, walletDDL)
	insertWalletRows(t, s, "0", "0", "9999999999999") // the last is not due
	// ev-1 has no asset, which its topic needs: it would go dead unpublished.
	if _, err := s.DB().Exec(`UPDATE wallet_outbox SET asset_type = '' WHERE event_id = 'ev-1'`); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "herald.yaml")
	// Nothing connects to the name server: a preview only reads the table.
	writeFile(t, cfg, walletRocketMQConfig(filepath.Join(dir, "wallet.db"), "127.0.0.1:1"))
	if code, out, e := cliRun(t, "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: exit %d: %s %s", code, out, e)
	}
	before := walletRowStates(t, s)
	code, out, e := cliRun(t, "lane", "preview", "wallet", "--config", cfg)
	if code != 0 {
		t.Fatalf("lane preview: exit %d: %s %s", code, out, e)
	}
	for _, want := range []string{"#1 event ev-0 (attempt 1)\n  destination: wallet_events_GOLD\n  tag: WALLET_EVENT\n  keys: ev-0 tx-0 cmd-0\n",
		"  header transactionId: tx-0\n", "  header CE_id: ev-0\n", `  body: {"eventId":"ev-0","userId":1000,"payload":{"n":0}}`,
		"#2 event ev-1 (attempt 1)\n  not sent: ", "row has an empty header.assetType, which the lane's destination needs\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("preview does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ev-2") {
		t.Errorf("preview shows a row that is not due:\n%s", out)
	}
	code, out, e = cliRun(t, "lane", "preview", "wallet", "--limit", "1", "--json", "--config", cfg)
	var got []map[string]any
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got) != 1 {
		t.Fatalf("--json --limit 1: exit %d, %v: %s %s", code, err, out, e)
	}
	if !reflect.DeepEqual(got[0]["keys"], []any{"ev-0", "tx-0", "cmd-0"}) || got[0]["tag"] != "WALLET_EVENT" ||
		!reflect.DeepEqual(got[0]["body"], map[string]any{"eventId": "ev-0", "userId": 1000.0, "payload": map[string]any{"n": 0.0}}) {
		t.Errorf("--json: %s", out)
	}
	if after := walletRowStates(t, s); after != before {
		t.Errorf("preview changed rows:\nbefore\n%s\nafter\n%s", before, after)
	}
}

// Rule: `herald lane preview` works on Herald's own tables too (the
// generic headers for a broker without a mapping of its own, the next due
// rows left pending), and refuses an unknown lane or a bad --limit with
// exit 2.
func TestAdoptLanePreviewOwnTableAndUsage(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "")
	if code, out, e := cliRun(t, "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: exit %d: %s %s", code, out, e)
	}
	s := openStore(t, dir)
	enqueueMany(t, s, "main_outbox", 3)
	code, out, e := cliRun(t, "lane", "preview", "main", "--config", cfg)
	if code != 0 || strings.Count(out, "destination: x.t\n") != 3 || !strings.Contains(out, "  header ce-type: Crash\n") ||
		!strings.Contains(out, `  body: {"i":0}`) {
		t.Fatalf("lane preview: exit %d: %s %s", code, out, e)
	}
	st, err := s.Stats(t.Context(), store.Scope{Table: "main_outbox"})
	if err != nil || st.Pending != 3 || st.InFlight != 0 {
		t.Errorf("after preview: %+v, %v; want 3 rows still pending", st, err)
	}
	for _, args := range [][]string{{"nosuch"}, {"main", "--limit", "0"}} {
		if code, out, e := cliRun(t, append(append([]string{"lane", "preview"}, args...), "--config", cfg)...); code != ExitUsage {
			t.Errorf("lane preview %v: exit %d, want %d: %s %s", args, code, ExitUsage, out, e)
		}
	}
}

// Rule: what `herald lane preview --json` shows of a mapped lane is what
// `herald run` then sends: rmqfake stores each wallet message with the
// previewed topic, tag, keys, properties and body.
func TestAdoptRunSendsWhatPreviewShows(t *testing.T) {
	c, err := rmqfake.New(rmqfake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	dir := t.TempDir()
	s := walletDB(t, dir, walletDDL)
	insertWalletRows(t, s, "0", "0", "0")
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, walletRocketMQConfig(filepath.Join(dir, "wallet.db"), c.NameServer()))
	if code, out, e := cliRun(t, "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: exit %d: %s %s", code, out, e)
	}
	code, out, e := cliRun(t, "lane", "preview", "wallet", "--json", "--config", cfg)
	var previews []previewed
	if err := json.Unmarshal([]byte(out), &previews); code != 0 || err != nil || len(previews) != 3 {
		t.Fatalf("preview: exit %d, %v: %s %s", code, err, out, e)
	}
	run := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 60*time.Second, "3 messages on wallet_events_GOLD", func() bool { return len(c.Messages("wallet_events_GOLD")) == 3 })
	run.terminate(t)
	sent := map[string]rmqfake.Message{}
	for _, m := range c.Messages("wallet_events_GOLD") {
		sent[m.Keys[0]] = m
	}
	for _, p := range previews {
		m := sent[p.EventID]
		if p.Destination != m.Topic || p.Tag != m.Tags || !reflect.DeepEqual(p.Keys, m.Keys) || string(p.Body) != string(m.Body) {
			t.Errorf("%s: previewed %+v (body %s), sent %+v", p.EventID, p.Preview, p.Body, m)
		}
		for k, v := range p.Headers {
			if m.Properties[k] != v {
				t.Errorf("%s: previewed property %s=%q, sent %q", p.EventID, k, v, m.Properties[k])
			}
		}
	}
}
