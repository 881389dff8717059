package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	heraldnats "github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/internal/testenv"
)

// Rule: `herald tail` prints the events the lane's broker receives from
// the moment it watches (here a NATS stream, on the lane's subjects), and
// `--count` ends it.
func TestTailPrintsWhatTheBrokerReceives(t *testing.T) {
	url := testenv.RequireNATS(t)
	sfx := strings.ToLower(herald.NewID()[24:])
	stream, prefix := "HERALD_CLITAIL_"+strings.ToUpper(sfx), "hclitail"+sfx
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pub, err := heraldnats.New(ctx, heraldnats.Config{URL: url, Stream: stream, Subjects: []string{prefix + ".>"}, CreateStream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	t.Cleanup(func() { deleteNATSStream(url, stream) })
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, "brokers:\n  events: {type: nats, url: \""+url+"\", stream: "+stream+"}\n"+
		"lanes:\n  - {name: wallet, destination: \""+prefix+".{topic}\"}\n")
	tail := startChild(t, dir, "tail", "wallet", "--config", cfg, "--count", "1", "--json")
	waitFor(t, 20*time.Second, "the tail to watch", func() bool {
		return strings.Contains(tail.stderr.String(), "lane wallet: watching NATS stream "+stream+", subjects "+prefix+".*")
	})
	ev := herald.Event{ID: herald.NewID(), Topic: "gifts", Type: "GiftSent", PartitionKey: "u1", Payload: []byte(`{"gift":"rose"}`)}
	if r := pub.Publish(ctx, []broker.Message{{Event: ev, Destination: prefix + ".gifts", Attempt: 1}}); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	select {
	case err := <-tail.done:
		tail.done <- err
		if err != nil {
			t.Fatalf("herald tail: %v\n%s", err, tail.stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("herald tail --count 1 did not end after an event:\n%s", tail.stderr.String())
	}
	out := tail.stderr.String()
	for _, want := range []string{ev.ID, `"destination":"` + prefix + `.gifts"`, `"gift":"rose"`, `"type":"GiftSent"`, `"key":"u1"`} {
		if !strings.Contains(out, want) {
			t.Errorf("herald tail printed no %s:\n%s", want, out)
		}
	}
}

// deleteNATSStream removes a test's stream from the shared server.
func deleteNATSStream(url, stream string) {
	nc, err := natsgo.Connect(url)
	if err != nil {
		return
	}
	defer nc.Close()
	if js, err := jetstream.New(nc); err == nil {
		_ = js.DeleteStream(context.Background(), stream)
	}
}

// Rule: `herald tail --json` prints one snake_case schema: the payload as
// JSON when it is JSON, a string when it is text, base64 (said so) when
// it is neither; no Go field names.
func TestTailJSONIsOneSchema(t *testing.T) {
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	ev := herald.Event{ID: "e1", Type: "GiftSent", Topic: "gifts", Tenant: "acme", PartitionKey: "u1",
		Headers: map[string]string{"trace": "t1"}, Payload: []byte(`{"gift":"rose"}`), CreatedAt: at}
	line, err := json.Marshal(tailedOf("x.gifts", ev))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"id", "type", "topic", "tenant", "key", "destination", "headers", "payload", "time"}
	if len(got) != len(want) {
		t.Errorf("keys %v, want exactly %v", slices.Sorted(maps.Keys(got)), want)
	}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q in %s", k, line)
		}
	}
	if p, ok := got["payload"].(map[string]any); !ok || p["gift"] != "rose" || got["key"] != "u1" ||
		got["tenant"] != "acme" || got["time"] != "2026-12-04T10:00:00Z" {
		t.Errorf("tail --json line %s", line)
	}
	ev.Payload = []byte("plain text")
	if line, _ := json.Marshal(tailedOf("d", ev)); !strings.Contains(string(line), `"payload":"plain text"`) ||
		strings.Contains(string(line), "payload_encoding") {
		t.Errorf("a text payload is printed as %s, want a string", line)
	}
	ev.Payload = []byte{0xff, 0x00, 0x01}
	if line, _ := json.Marshal(tailedOf("d", ev)); !strings.Contains(string(line), `"payload":"/wAB"`) ||
		!strings.Contains(string(line), `"payload_encoding":"base64"`) {
		t.Errorf("a binary payload is printed as %s, want base64, said so", line)
	}
}

// Rule: text mode names the tenant and cuts a long payload, unless --full.
func TestTailTextShowsTenantAndCutsPayloads(t *testing.T) {
	var out bytes.Buffer
	a := &app{stdout: &out}
	ev := herald.Event{ID: "e1", Type: "Big", Tenant: "acme", Payload: bytes.Repeat([]byte("x"), 1<<20)}
	a.printTailed("d", ev, tailOptions{})
	if line := out.String(); len(line) > 400 || !strings.Contains(line, "tenant=acme") {
		t.Errorf("text line of %d bytes (want a cut payload) naming the tenant: %.300s", len(line), line)
	}
	out.Reset()
	a.printTailed("d", ev, tailOptions{full: true})
	if n := out.Len(); n < 1<<20 {
		t.Errorf("--full printed %d bytes, want the whole 1 MiB payload", n)
	}
}

// Rule: a tail against a NATS server that is not there fails at once,
// saying where and why.
func TestTailUnreachableNATSSaysWhereAndWhy(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "herald.yaml")
	url := fmt.Sprintf("nats://127.0.0.1:%d", testenv.FreePort(t))
	writeFile(t, cfg, "brokers:\n  events: {type: nats, url: \""+url+"\", stream: NOPE}\n"+
		"lanes:\n  - {name: wallet, destination: \"x.{topic}\"}\n")
	began := time.Now()
	code, _, stderr := cliRun(t, "tail", "wallet", "--config", cfg)
	if code == 0 || !strings.Contains(stderr, "cannot reach "+url) || !strings.Contains(stderr, "connection refused") ||
		strings.Contains(stderr, "outbound buffer") {
		t.Errorf("exit %d, stderr %q; want an error naming %s and the refusal", code, stderr, url)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("the tail took %v to give up", took)
	}
}
