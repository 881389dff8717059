package kafka

import (
	"fmt"
	"testing"

	. "github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/internal/benchpub"
)

// BenchmarkPublish measures batch throughput against an in-process kfake
// cluster (which shares the CPU with the producer: a floor, not Kafka's
// speed).
func BenchmarkPublish(b *testing.B) {
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprint("batch=", size), func(b *testing.B) {
			cl := startCluster(b, 8, []string{"bench"})
			p := newPublisher(b, Config{Brokers: []string{cl.addr()}})
			benchpub.Publish(b, p, size, func(int) string { return "bench" })
		})
	}
}
