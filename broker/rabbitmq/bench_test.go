package rabbitmq

import (
	"fmt"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/heraldhq/herald/internal/benchpub"
)

// BenchmarkPublish measures batch throughput (confirms, mandatory,
// persistent) into a durable queue capped at 10,000 messages.
func BenchmarkPublish(b *testing.B) {
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprint("batch=", size), func(b *testing.B) {
			f := newFixture(b)
			_, err := f.ch.QueueDeclare(f.queue+"-capped", true, false, false, false,
				amqp.Table{"x-max-length": int32(10000)})
			must(b, err)
			b.Cleanup(func() { _, _ = f.ch.QueueDelete(f.queue+"-capped", false, false, false) })
			must(b, f.ch.QueueBind(f.queue+"-capped", "bench", f.exchange, false, nil))
			p := newPublisher(b, Config{URL: testURL(testAddr), Exchange: f.exchange})
			benchpub.Publish(b, p, size, func(int) string { return "bench" })
		})
	}
}
