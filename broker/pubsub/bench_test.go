package pubsub

import (
	"fmt"
	"testing"

	"github.com/heraldhq/herald/internal/benchpub"
	"github.com/heraldhq/herald/internal/testenv"
)

// BenchmarkPublish measures batch throughput (ordering keys, every
// message's id awaited) to pstest in this process, sharing the CPU.
func BenchmarkPublish(b *testing.B) {
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprint("batch=", size), func(b *testing.B) {
			srv := fake(b)
			topic := testenv.Name("herald-bench")
			c := admin(b, srv.Addr)
			createTopic(b, c, topic)
			p := newPublisher(b, Config{EmulatorHost: srv.Addr})
			benchpub.Publish(b, p, size, func(int) string { return topic })
		})
	}
}
