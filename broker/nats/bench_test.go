package nats_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	heraldnats "github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/natsembed"
)

// BenchmarkPublishBatch measures batch throughput (msgs/s) with 1 KiB
// payloads against the embedded server (default fsync every 2 minutes, and
// SyncAlways) and the machine's NATS.
//
//	go test -run '^$' -bench PublishBatch -count 5 ./broker/nats
func BenchmarkPublishBatch(b *testing.B) {
	b.Run("embedded", func(b *testing.B) {
		srv, err := natsembed.Start(natsembed.Config{Dir: b.TempDir(), Port: natsembed.RandomPort})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Shutdown()
		benchBatches(b, srv.ClientURL())
	})
	b.Run("embedded-syncalways", func(b *testing.B) {
		srv, err := natsembed.Start(natsembed.Config{Dir: b.TempDir(), Port: natsembed.RandomPort, SyncAlways: true})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Shutdown()
		benchBatches(b, srv.ClientURL())
	})
	b.Run("machine", func(b *testing.B) {
		nc, err := natsgo.Connect(machineURL(), natsgo.Timeout(time.Second))
		if err != nil {
			b.Skipf("NATS at %s unreachable: %v", machineURL(), err)
		}
		nc.Close()
		benchBatches(b, machineURL())
	})
}

func benchBatches(b *testing.B, url string) {
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			stream, prefix := "HB_"+suffix(), "hb."+suffix()
			boundedStream(b, url, stream, prefix)
			p, err := heraldnats.New(context.Background(), heraldnats.Config{URL: url, Stream: stream})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			payload := bytes.Repeat([]byte("x"), 1024)
			msgs := make([]broker.Message, size)
			b.ResetTimer()
			for b.Loop() {
				for i := range msgs {
					msgs[i] = broker.Message{Destination: prefix + ".e", Event: herald.Event{
						ID: herald.NewID(), Topic: "t", Type: "T", PartitionKey: fmt.Sprint(i % 16), Payload: payload,
					}}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				for _, r := range p.Publish(ctx, msgs) {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
				cancel()
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// boundedStream creates a stream that keeps at most 100k messages, so a
// long benchmark does not fill the disk, and deletes it afterwards.
func boundedStream(b *testing.B, url, stream, prefix string) {
	nc, err := natsgo.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".>"},
		Storage: jetstream.FileStorage, MaxMsgs: 100_000}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, stream)
		nc.Close()
	})
}

// BenchmarkRawAsync is the reference for BenchmarkPublishBatch: plain
// jetstream.PublishMsgAsync with a message id and the same headers' worth
// of nothing else, against the embedded server, batch 1000.
func BenchmarkRawAsync(b *testing.B) {
	srv, err := natsembed.Start(natsembed.Config{Dir: b.TempDir(), Port: natsembed.RandomPort})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	stream, prefix := "HB_"+suffix(), "hb."+suffix()
	boundedStream(b, srv.ClientURL(), stream, prefix)
	nc, err := natsgo.Connect(srv.ClientURL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	payload := bytes.Repeat([]byte("x"), 1024)
	const size = 1000
	for b.Loop() {
		for range size {
			if _, err := js.PublishAsync(prefix+".e", payload, jetstream.WithMsgID(herald.NewID())); err != nil {
				b.Fatal(err)
			}
		}
		<-js.PublishAsyncComplete()
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "msgs/s")
}
