package projectortest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// RawMessage is a message as a producer other than Herald sends it: these
// headers, names exactly as given, and this body.
type RawMessage struct {
	Headers map[string]string
	Body    []byte
}

// RawConfig describes a broker.Subscriber for RunRawColliding.
type RawConfig struct {
	// Subscribe returns a new subscriber on the test's subscription; it is
	// called once, before anything is published.
	Subscribe func(tb testing.TB) broker.Subscriber
	// Publish sends msgs to the subscription's stream, topic or queue,
	// bypassing Herald's publisher.
	Publish func(tb testing.TB, msgs []RawMessage)
	// HeaderPrefix is the subscriber's CloudEvents prefix.
	HeaderPrefix string
	// Events is how many messages to send. Defaults to 20.
	Events int
	// Within bounds the projection. Defaults to 1 minute.
	Within time.Duration
}

// RunRawColliding checks that the subscriber reads the CloudEvents id and
// type deterministically when a message from another producer names them
// twice: the exact spelling (prefix+"id", the event's own) and another
// case ("Ce-Id": "forwarded-1"). Every message must be applied once under
// its own id and type: the ledger holds one row per message.
func RunRawColliding(t *testing.T, cfg RawConfig) {
	if cfg.Events <= 0 {
		cfg.Events = 20
	}
	if cfg.Within <= 0 {
		cfg.Within = time.Minute
	}
	s := SQLite(filepath.Join(t.TempDir(), "raw.db"))(t)
	ledger := Name("herald_raw_pe")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.MigrateProjections(ctx, ledger); err != nil {
		t.Fatal(err)
	}
	model := NewModel(t, s)
	sub := cfg.Subscribe(t)
	t.Cleanup(func() { _ = sub.Close() })
	cfg.Publish(t, rawColliding(cfg.HeaderPrefix, cfg.Events))
	seen := projectForwarded(ctx, t, s, sub, model, ledger, "", cfg.Events, cfg.Within)
	checkForwarded(t, s, model, ledger, seen, cfg.Events)
}

// rawColliding returns n messages naming the id and type twice: exactly,
// with the message's own values, and in another case with a forwarded
// event's.
func rawColliding(prefix string, n int) []RawMessage {
	msgs := make([]RawMessage, n)
	for i := range msgs {
		body, _ := json.Marshal(Payload{Key: forwardedKey(i), Seq: 1})
		id, typ := otherCase(prefix, "id", i), otherCase(prefix, "type", i)
		msgs[i] = RawMessage{Body: body, Headers: map[string]string{
			prefix + "id": herald.NewID(), prefix + "type": "Counted", id: "forwarded-1", typ: "Forwarded",
		}}
	}
	return msgs
}

// otherCase returns prefix+name in a case other than the exact one,
// variant i of three.
func otherCase(prefix, name string, i int) string {
	switch i % 3 {
	case 0:
		return strings.ToUpper(prefix[:1]) + prefix[1:] + strings.ToUpper(name[:1]) + name[1:]
	case 1:
		return strings.ToUpper(prefix + name)
	}
	return strings.ToLower(prefix) + strings.ToUpper(name)
}
