package mqtt

import (
	"fmt"
	"testing"

	"github.com/heraldhq/herald/internal/benchpub"
	"github.com/heraldhq/herald/internal/testenv"
)

// BenchmarkPublish measures batch throughput (QoS 1, each message's
// PUBACK awaited) to the machine's mosquitto, on a topic nobody
// subscribes to (the server acks and keeps nothing).
func BenchmarkPublish(b *testing.B) {
	url := testenv.RequireMQTT(b)
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprint("batch=", size), func(b *testing.B) {
			p := newPublisher(b, Config{URL: url})
			topic := testenv.Name("herald-bench") + "/x"
			benchpub.Publish(b, p, size, func(int) string { return topic })
		})
	}
}
