package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/heraldhq/herald"
)

// TailConfig says which records Tail shows.
type TailConfig struct {
	// Conn is how to reach the cluster (brokers, client id, TLS, SASL).
	Conn Config
	// Topics are the topics to watch.
	Topics []string
}

// Tail calls fn for each record appended to the topics from now on, until
// ctx ends, then returns nil. It reads without a consumer group, from each
// partition's end offset as listed before ready is called (ready may be
// nil), so it commits nothing and changes nothing for consumer groups.
func Tail(ctx context.Context, cfg TailConfig, ready func(), fn func(topic string, ev herald.Event)) error {
	conn := cfg.Conn.WithDefaults()
	sec, err := securityOpts(conn.TLS, conn.SASL)
	if err != nil {
		return fmt.Errorf("kafka: tail: %w", err)
	}
	base := append([]kgo.Opt{kgo.SeedBrokers(conn.Brokers...), kgo.ClientID(conn.ClientID)}, sec...)
	admin, err := kgo.NewClient(base...)
	if err != nil {
		return fmt.Errorf("kafka: tail: %w", err)
	}
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, cfg.Topics...)
	admin.Close()
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka: tail %v: end offsets: %w", cfg.Topics, err)
	}
	from := map[string]map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if from[o.Topic] == nil {
			from[o.Topic] = map[int32]kgo.Offset{}
		}
		from[o.Topic][o.Partition] = kgo.NewOffset().At(o.Offset)
	})
	cl, err := kgo.NewClient(append(base, kgo.ConsumePartitions(from))...)
	if err != nil {
		return fmt.Errorf("kafka: tail: %w", err)
	}
	defer cl.Close()
	if ready != nil {
		ready()
	}
	for ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		for _, fe := range fetches.Errors() {
			if !errors.Is(fe.Err, context.Canceled) && !errors.Is(fe.Err, context.DeadlineExceeded) {
				return fmt.Errorf("kafka: tail %s: %w", fe.Topic, fe.Err)
			}
		}
		fetches.EachRecord(func(r *kgo.Record) { fn(r.Topic, recordEvent(r)) })
	}
	return nil
}
