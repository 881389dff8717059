// Package redis publishes events to Redis Streams with XADD.
//
// # The entry
//
// The stream is the message's Destination (the lane's template). Each entry
// has the payload under Config.BodyField ("payload") and one field per
// header: the CloudEvents attributes with the "ce-" prefix (ce-id is the
// event id, the consumer's dedupe key: Redis before 8.6 has no dedupe) and
// the user headers as they are. With MaxLen set, XADD trims approximately.
//
// # Order, errors and durability
//
// A batch goes out as one pipeline on one connection, so entries are
// appended in the order given, per key and overall. A failure after the
// pipeline was written (a timeout, a dropped connection) is ambiguous; a
// failure to connect is retryable; WRONGTYPE (the key is not a stream) and
// payloads over MaxPayload are permanent. An acknowledged XADD is on disk
// only as far as the server's persistence says: run Redis with
// appendonly yes and appendfsync always (or everysec, accepting a second of
// loss on power failure).
package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/internal/keyed"
)

// ErrClosed is returned for messages published after Close.
var ErrClosed = errors.New("redis: publisher is closed")

// Publisher appends events to Redis streams. It is safe for concurrent use.
type Publisher struct {
	cfg    Config
	client *goredis.Client
	closed atomic.Bool
}

var (
	_ broker.Publisher = (*Publisher)(nil)
	_ broker.Limiter   = (*Publisher)(nil)
)

// New checks cfg, connects and pings the server within ctx.
func New(ctx context.Context, cfg Config) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts, err := goredis.ParseURL(cfg.URL)
	if err != nil {
		// ParseURL's errors can quote the URL, which holds the password.
		return nil, errors.New("redis: url: not a valid redis:// or rediss:// URL")
	}
	opts.DialTimeout = cfg.DialTimeout
	opts.PoolSize = cfg.PoolSize
	// The batch context's deadline (the lane's publish_timeout) bounds
	// every read and write, instead of go-redis's fixed 3s timeouts.
	opts.ContextTimeoutEnabled = true
	// go-redis retries failed commands itself; a retried XADD can append
	// twice, and the relay retries anyway, with the event id as dedupe key.
	opts.MaxRetries = -1
	client := goredis.NewClient(opts)
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, broker.MarkUnreachable(fmt.Errorf("redis: ping %s: %w", opts.Addr, err))
	}
	return &Publisher{cfg: cfg, client: client}, nil
}

// Guarantees: entries are appended in pipeline order; no dedupe.
func (p *Publisher) Guarantees() broker.Guarantees { return broker.Guarantees{KeyOrder: true} }

// MaxPayload implements broker.Limiter.
func (p *Publisher) MaxPayload() int { return p.cfg.MaxPayload }

// Close closes the connections. Publish after Close fails with ErrClosed.
func (p *Publisher) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	return p.client.Close()
}

// Publish appends every message with one pipeline and returns one result
// per message, in order.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	results := make([]broker.Result, len(msgs))
	if p.closed.Load() {
		for i := range results {
			results[i].Err = ErrClosed
		}
		return results
	}
	if err := ctx.Err(); err != nil {
		for i := range results {
			results[i].Err = fmt.Errorf("redis: not sent: %w", context.Cause(ctx))
		}
		return results
	}
	pipe := p.client.Pipeline()
	cmds := make([]*goredis.StringCmd, len(msgs))
	// A message refused here must hold back the later ones of its key, or
	// they would be stored ahead of its retry. (Failures the server reports
	// come too late for that; they are stream-wide, WRONGTYPE or OOM, so
	// they hit the whole key anyway.)
	failedKeys := map[string]bool{}
	for i, m := range msgs {
		key := m.Event.PartitionKey
		if key != "" && failedKeys[key] {
			results[i].Err = keyed.ErrEarlierFailed
			continue
		}
		args, err := p.xaddArgs(m)
		if err != nil {
			results[i].Err = herald.Permanent(err)
			failedKeys[key] = key != ""
			continue
		}
		cmds[i] = pipe.XAdd(ctx, args)
	}
	if pipe.Len() > 0 {
		_, _ = pipe.Exec(ctx) // each command carries its own error
	}
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		id, err := cmd.Result()
		if err != nil {
			results[i].Err = classify(msgs[i], err)
			continue
		}
		results[i].Receipt = herald.Receipt{Stream: msgs[i].Destination, MessageID: id}
	}
	return results
}

// xaddArgs maps a message to its XADD, or explains why it never could be.
func (p *Publisher) xaddArgs(m broker.Message) (*goredis.XAddArgs, error) {
	ev := m.Event
	if len(ev.Payload) > p.cfg.MaxPayload {
		return nil, fmt.Errorf("%w: redis: event %s: payload is %d bytes, the limit (max_payload) is %d",
			herald.ErrPayloadTooLarge, ev.ID, len(ev.Payload), p.cfg.MaxPayload)
	}
	if m.Destination == "" {
		return nil, fmt.Errorf("redis: event %s: the stream name (destination) is empty", ev.ID)
	}
	headers := broker.Headers(m, "ce-", p.cfg.Source)
	if _, ok := headers[p.cfg.BodyField]; ok {
		return nil, fmt.Errorf("redis: event %s: header %q collides with body_field", ev.ID, p.cfg.BodyField)
	}
	names := make([]string, 0, len(headers))
	for k := range headers {
		names = append(names, k)
	}
	slices.Sort(names) // a stable field order makes entries easy to diff
	values := make([]any, 0, 2+2*len(names))
	values = append(values, p.cfg.BodyField, ev.Payload)
	for _, k := range names {
		values = append(values, k, headers[k])
	}
	return &goredis.XAddArgs{
		Stream: m.Destination,
		MaxLen: p.cfg.MaxLen,
		Approx: p.cfg.MaxLen > 0,
		ID:     "*",
		Values: values,
	}, nil
}

// classify sorts an XADD failure into permanent, ambiguous or retryable.
func classify(m broker.Message, err error) error {
	wrapped := fmt.Errorf("redis: XADD %s (event %s): %w", m.Destination, m.Event.ID, err)
	var rerr goredis.Error
	if errors.As(err, &rerr) {
		// A reply from the server: the command ran and failed, nothing was
		// appended. WRONGTYPE will not change by retrying; OOM, LOADING,
		// READONLY, NOAUTH and the like can.
		if strings.HasPrefix(rerr.Error(), "WRONGTYPE") {
			return herald.Permanent(wrapped)
		}
		if serverUnavailable(rerr.Error()) {
			return herald.Unavailable(wrapped)
		}
		return wrapped
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return herald.Unavailable(wrapped) // never reached the server
	}
	if errors.Is(err, goredis.ErrPoolTimeout) || errors.Is(err, goredis.ErrClosed) {
		return herald.Unavailable(wrapped) // never got a connection
	}
	// A timeout or a connection lost after the pipeline was written: the
	// entry may be in the stream.
	if broker.Unreachable(err) {
		return herald.Unavailable(herald.Ambiguous(wrapped))
	}
	return herald.Ambiguous(wrapped)
}

// serverUnavailable reports whether a Redis error reply says the server
// cannot take any write now (loading its dataset, a replica, a failover
// under way, out of memory), not anything about the entry.
func serverUnavailable(reply string) bool {
	for _, p := range []string{"LOADING", "READONLY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "OOM"} {
		if strings.HasPrefix(reply, p) {
			return true
		}
	}
	return false
}
