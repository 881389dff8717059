package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// SubscriberConfig configures a Subscriber: one consumer of a Redis
// Streams consumer group.
type SubscriberConfig struct {
	// URL is the server, as in Config. Defaults to DefaultURL.
	URL string
	// Stream is the stream to consume. Required.
	Stream string
	// Group is the consumer group, created at the stream's start if
	// missing: every process of one projection uses the same one. Required.
	Group string
	// Consumer is this consumer's name in the group. Defaults to
	// host-pid-random, unique per process.
	Consumer string
	// BodyField is the field holding the payload. Defaults to "payload".
	BodyField string
	// MinIdle is how long an entry stays pending (delivered, not acked)
	// before another consumer reclaims it with XAUTOCLAIM: the time after
	// which a crashed consumer's entries are taken over. It must exceed an
	// event's apply, retries included. Defaults to 1m.
	MinIdle time.Duration
	// Block is the longest one XREADGROUP waits. Defaults to 500ms.
	Block time.Duration
}

func (c SubscriberConfig) withDefaults() SubscriberConfig {
	if c.URL == "" {
		c.URL = DefaultURL
	}
	if c.BodyField == "" {
		c.BodyField = DefaultBodyField
	}
	if c.MinIdle <= 0 {
		c.MinIdle = time.Minute
	}
	if c.Block <= 0 {
		c.Block = 500 * time.Millisecond
	}
	if c.Consumer == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		c.Consumer = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	return c
}

// Subscriber is a broker.Subscriber on a Redis Streams consumer group.
// Ack is XACK. An entry not acked stays in the group's pending list; this
// consumer reads its own pending entries first when it starts, and every
// MinIdle/2 reclaims other consumers' entries idle longer than MinIdle
// (XAUTOCLAIM), which is how a crashed consumer's entries get applied.
// Rewind moves the group back to the stream's first entry.
type Subscriber struct {
	cfg SubscriberConfig
	cl  *goredis.Client

	mu          sync.Mutex
	ownDone     bool      // own pending entries read after start
	lastReclaim time.Time // last XAUTOCLAIM pass
}

var (
	_ broker.Subscriber = (*Subscriber)(nil)
	_ broker.Rewinder   = (*Subscriber)(nil)
)

// NewSubscriber connects and creates the group if it is missing.
func NewSubscriber(ctx context.Context, cfg SubscriberConfig) (*Subscriber, error) {
	cfg = cfg.withDefaults()
	if cfg.Stream == "" || cfg.Group == "" {
		return nil, errors.New("redis: subscriber: Stream and Group are required")
	}
	opts, err := goredis.ParseURL(cfg.URL)
	if err != nil {
		return nil, errors.New("redis: subscriber: the URL does not parse") // the URL holds a password
	}
	s := &Subscriber{cfg: cfg, cl: goredis.NewClient(opts), lastReclaim: time.Now()}
	err = s.cl.XGroupCreateMkStream(ctx, cfg.Stream, cfg.Group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		s.cl.Close()
		return nil, fmt.Errorf("redis: create group %s on %s: %w", cfg.Group, cfg.Stream, err)
	}
	return s, nil
}

// Receive returns up to most entries: this consumer's own pending entries
// after a restart, then reclaimed idle entries of other consumers when a
// reclaim is due, then new entries, waiting until some arrive or ctx ends.
func (s *Subscriber) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		msgs, err := s.next(ctx, most)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("redis: read %s: %w", s.cfg.Stream, err)
		}
		if len(msgs) > 0 {
			out := make([]broker.Received, len(msgs))
			for i, m := range msgs {
				out[i] = s.received(m)
			}
			return out, nil
		}
	}
}

func (s *Subscriber) next(ctx context.Context, most int) ([]goredis.XMessage, error) {
	s.mu.Lock()
	own := !s.ownDone
	reclaim := time.Since(s.lastReclaim) >= s.cfg.MinIdle/2
	if reclaim {
		s.lastReclaim = time.Now()
	}
	s.mu.Unlock()
	if own {
		msgs, err := s.read(ctx, most, "0", -1)
		if err == nil && len(msgs) == 0 {
			s.mu.Lock()
			s.ownDone = true
			s.mu.Unlock()
		}
		if err != nil || len(msgs) > 0 {
			return msgs, err
		}
	}
	if reclaim {
		msgs, _, err := s.cl.XAutoClaim(ctx, &goredis.XAutoClaimArgs{Stream: s.cfg.Stream, Group: s.cfg.Group,
			Consumer: s.cfg.Consumer, MinIdle: s.cfg.MinIdle, Start: "0-0", Count: int64(most)}).Result()
		if err != nil || len(msgs) > 0 {
			return msgs, err
		}
	}
	return s.read(ctx, most, ">", s.cfg.Block)
}

// read runs XREADGROUP from id ("0": own pending entries, ">": new ones).
func (s *Subscriber) read(ctx context.Context, most int, id string, block time.Duration) ([]goredis.XMessage, error) {
	res, err := s.cl.XReadGroup(ctx, &goredis.XReadGroupArgs{Group: s.cfg.Group, Consumer: s.cfg.Consumer,
		Streams: []string{s.cfg.Stream, id}, Count: int64(most), Block: block}).Result()
	if errors.Is(err, goredis.Nil) {
		return nil, nil
	}
	if err != nil || len(res) == 0 {
		return nil, err
	}
	return res[0].Messages, nil
}

// received decodes an entry (entryEvent) with its settlement.
func (s *Subscriber) received(m goredis.XMessage) broker.Received {
	ev := entryEvent(m, s.cfg.Stream, s.cfg.BodyField)
	id := m.ID
	return broker.Received{Event: ev,
		Ack: func(ctx context.Context) error { return s.cl.XAck(ctx, s.cfg.Stream, s.cfg.Group, id).Err() },
		// Redis has no nack: the entry stays pending for this consumer
		// (read again on restart) or for XAUTOCLAIM after MinIdle.
		Nack: func(context.Context) error { return nil }}
}

// entryEvent decodes an entry: the body field is the payload, the others
// are headers. An entry without ce-id gets its entry id as event id.
func entryEvent(m goredis.XMessage, stream, bodyField string) herald.Event {
	h := make(map[string]string, len(m.Values))
	var body []byte
	for k, v := range m.Values {
		str, _ := v.(string)
		if k == bodyField {
			body = []byte(str)
			continue
		}
		h[k] = str
	}
	ev := broker.EventFromHeaders(h, "ce-", body)
	if ev.ID == "" {
		ev.ID = "redis:" + stream + ":" + m.ID
	}
	return ev
}

// Rewind moves the group to the stream's start: every entry still in the
// stream is delivered again. Stop the group's other consumers first.
func (s *Subscriber) Rewind(ctx context.Context) error {
	if err := s.cl.XGroupSetID(ctx, s.cfg.Stream, s.cfg.Group, "0").Err(); err != nil {
		return fmt.Errorf("redis: rewind %s: %w", s.cfg.Group, err)
	}
	return nil
}

// Close closes the connections. Pending entries stay pending.
func (s *Subscriber) Close() error { return s.cl.Close() }
