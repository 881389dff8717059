package cli

import (
	"context"
	"path/filepath"
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
	for _, want := range []string{ev.ID, `"destination":"` + prefix + `.gifts"`, `"gift":"rose"`, "GiftSent"} {
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
