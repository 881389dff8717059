package kafka

import (
	"context"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// dialVia is the franz-go option that dials via[addr] instead of addr,
// and addr itself when via does not name it.
//
// A Kafka client reaches the seed brokers first and then every broker at
// the address the cluster advertises in its metadata, so a proxy or tunnel
// in front of the seeds alone is bypassed; herald verify puts a fault
// proxy in front of each broker and gives its relays the map.
func dialVia(via map[string]string, timeout time.Duration) kgo.Opt {
	d := &net.Dialer{Timeout: timeout}
	return kgo.Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := via[addr]; ok {
			addr = to
		}
		return d.DialContext(ctx, network, addr)
	})
}
