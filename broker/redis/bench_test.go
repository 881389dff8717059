package redis

import (
	"fmt"
	"testing"

	"github.com/heraldhq/herald/internal/benchpub"
)

// BenchmarkPublish measures batch throughput against the Redis server,
// trimming the stream to about 10,000 entries as a production lane would.
func BenchmarkPublish(b *testing.B) {
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprint("batch=", size), func(b *testing.B) {
			p := newPublisher(b, Config{MaxLen: 10000})
			s := stream(b)
			benchpub.Publish(b, p, size, func(int) string { return s })
		})
	}
}
