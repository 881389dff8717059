package nats_test

import (
	"context"
	"errors"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/broker/brokertest"
)

// reader reads back what a stream stored, over its own connection, by
// sequence number: JetStream stores before it acks, so no consumer is needed.
type reader struct {
	js     jetstream.JetStream
	stream string
	next   uint64 // next sequence to fetch
	got    []brokertest.Received
}

func newReader(t *testing.T, url, stream string) *reader {
	t.Helper()
	nc, err := natsgo.Connect(url, natsgo.MaxReconnects(-1), natsgo.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatalf("reader: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	return &reader{js: js, stream: stream, next: 1}
}

// Read implements brokertest.Setup.Read.
func (r *reader) Read(t *testing.T, dest string, want int) []brokertest.Received {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := r.fetch()
		out := r.filter(dest)
		if len(out) >= want || time.Now().After(deadline) {
			if err != nil {
				t.Logf("reader: %v", err)
			}
			return out
		}
		time.Sleep(20 * time.Millisecond) // polling the stream, bounded by deadline
	}
}

// fetch reads the messages stored since the last call.
func (r *reader) fetch() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := r.js.Stream(ctx, r.stream)
	if err != nil {
		return err
	}
	last := s.CachedInfo().State.LastSeq
	for ; r.next <= last; r.next++ {
		m, err := s.GetMsg(ctx, r.next)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		h := map[string]string{}
		for k, vs := range m.Header {
			if len(vs) > 0 {
				h[k] = vs[0]
			}
		}
		r.got = append(r.got, brokertest.Received{
			Destination: m.Subject,
			Headers:     h,
			Body:        m.Data,
			MessageID:   m.Header.Get(jetstream.MsgIDHeader),
		})
	}
	return nil
}

func (r *reader) filter(dest string) []brokertest.Received {
	var out []brokertest.Received
	for _, m := range r.got {
		if m.Destination == dest {
			out = append(out, m)
		}
	}
	return out
}
