// Package benchpub is the batch-throughput benchmark every publisher
// adapter runs, so that their figures compare. Only _test files import it.
package benchpub

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// PayloadSize is the payload size of the shared publisher benchmark.
const PayloadSize = 1024

// Publish measures p's batch throughput: b.N batches of batchSize
// messages with 1 KiB payloads over 16 partition keys, to dest(i) for
// message i, reported as msgs/s. Any failed message fails the benchmark.
func Publish(b *testing.B, p broker.Publisher, batchSize int, dest func(i int) string) {
	b.Helper()
	payload := bytes.Repeat([]byte("x"), PayloadSize)
	msgs := make([]broker.Message, batchSize)
	for i := range msgs {
		msgs[i] = broker.Message{Destination: dest(i), Attempt: 1, Event: herald.Event{
			ID: herald.NewID(), Tenant: "bench", Topic: "bench", Type: "BenchEvent",
			PartitionKey: fmt.Sprint("key-", i%16), Payload: payload, CreatedAt: time.Now(),
			Headers: map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		}}
	}
	b.SetBytes(int64(batchSize * PayloadSize))
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res := p.Publish(ctx, msgs)
		cancel()
		for i, r := range res {
			if r.Err != nil {
				b.Fatalf("message %d: %v", i, r.Err)
			}
		}
	}
	b.ReportMetric(float64(b.N*batchSize)/b.Elapsed().Seconds(), "msgs/s")
}
