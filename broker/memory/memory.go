// Package memory is an in-memory broker.Publisher with fault hooks, for
// tests of everything that publishes (the relay above all).
//
// It records every message it accepts, in order, and can be told to fail:
// the Nth message, the next K tries of one event id, every message while it
// is "down", or whatever a hook function decides. It can delay its acks and
// it can "lose" an ack: keep the message and still report an ambiguous
// error, which is exactly the case event ids exist for.
//
// # Fault semantics
//
// Every message handed to Publish is one attempt, counted from 1 across all
// Publish calls (Attempts). For each attempt, in this order:
//
//  1. after Close: an error wrapping ErrClosed; not stored.
//  2. ctx already done: an error wrapping ctx.Err(); not stored (retryable,
//     since the message provably never left).
//  3. payload over MaxPayload: herald.ErrPayloadTooLarge, permanent.
//  4. SetDown(err) with a non-nil err: that error; not stored.
//  5. FailNth / FailEvent / the hook (SetHook), first match wins: the error
//     they give. It is returned as given (wrap it with herald.Permanent for a
//     permanent failure) and the message is not stored, unless it wraps
//     ErrAckLost: then the message is stored and the result is
//     herald.Ambiguous(err), "published but the ack was lost".
//  6. otherwise the message is stored; its Receipt has Stream = Config.Stream
//     and Sequence = its 1-based position in Records.
//  7. SetDelay(d): the ack then takes d. If ctx ends first the result is an
//     ambiguous error, and the message stays stored, like a real broker whose
//     ack arrived too late.
//
// Messages of one Publish call are handled one after another, so per-key
// order within a batch is kept; concurrent Publish calls interleave. Once a
// message with a partition key fails without being stored, the later
// messages of that key in the same batch are not sent either (a retryable
// error), so a retry cannot land behind its successors: every publisher
// keeps this rule (brokertest checks it).
package memory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// ErrClosed is returned for messages published after Close.
var ErrClosed = errors.New("memory broker: publisher is closed")

// ErrAckLost, wrapped in an error a fault gives, makes the publisher store
// the message and still report an ambiguous error.
var ErrAckLost = errors.New("memory broker: ack lost")

// DefaultMaxPayload is the payload limit when Config.MaxPayload is zero:
// 1 MiB, the NATS default, so tests meet the same limit as production.
const DefaultMaxPayload = 1 << 20

// Config configures a Publisher. The zero value is ready to use.
type Config struct {
	// MaxPayload is the largest payload accepted, in bytes. Defaults to
	// DefaultMaxPayload; negative means no limit.
	MaxPayload int
	// Stream is the stream name put in receipts. Defaults to "memory".
	Stream string
	// Source is the CloudEvents source used for Record.Headers. Defaults to
	// broker.DefaultSource.
	Source string
}

// WithDefaults returns a copy of c with the defaults filled in.
func (c Config) WithDefaults() Config {
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.Stream == "" {
		c.Stream = "memory"
	}
	if c.Source == "" {
		c.Source = broker.DefaultSource
	}
	return c
}

// Record is one stored message.
type Record struct {
	// Message is the message as published (its Event.Payload and
	// Event.Headers are copies, safe to keep).
	Message broker.Message
	// Headers are the headers a real broker would carry:
	// broker.Headers(Message, "ce-", Config.Source).
	Headers map[string]string
	// Receipt is what Publish reported for it.
	Receipt herald.Receipt
}

// Publisher is the in-memory broker. It is safe for concurrent use,
// including its fault setters, which may be called while publishing.
type Publisher struct {
	cfg Config

	mu       sync.Mutex
	records  []Record
	seen     map[string]int // event id → times stored
	attempts int
	closed   bool
	changed  chan struct{} // closed and replaced on every store, for waiters
	faults   faults
}

var (
	_ broker.Publisher = (*Publisher)(nil)
	_ broker.Limiter   = (*Publisher)(nil)
)

// New returns a Publisher configured by cfg.
func New(cfg Config) *Publisher {
	return &Publisher{
		cfg:     cfg.WithDefaults(),
		seen:    map[string]int{},
		changed: make(chan struct{}),
		faults:  newFaults(),
	}
}

// Guarantees is what the memory broker promises: per-key order, no dedupe.
func (p *Publisher) Guarantees() broker.Guarantees {
	return broker.Guarantees{KeyOrder: true}
}

// MaxPayload implements broker.Limiter. Zero means no limit.
func (p *Publisher) MaxPayload() int {
	if p.cfg.MaxPayload < 0 {
		return 0
	}
	return p.cfg.MaxPayload
}

// Publish implements broker.Publisher; see the package doc for the faults.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	results := make([]broker.Result, len(msgs))
	var held map[string]bool // keys with a message not stored in this batch
	for i, m := range msgs {
		key := m.Event.PartitionKey
		if key != "" && held[key] {
			results[i].Err = fmt.Errorf("memory broker: event %s not sent: an earlier message of partition key %q in this batch failed", m.Event.ID, key)
			continue
		}
		var stored bool
		results[i], stored = p.publishOne(ctx, m)
		if !stored && key != "" {
			if held == nil {
				held = map[string]bool{}
			}
			held[key] = true
		}
	}
	return results
}

// publishOne handles one attempt and says whether m was stored.
func (p *Publisher) publishOne(ctx context.Context, m broker.Message) (broker.Result, bool) {
	attempt, err := p.precheck(ctx, m)
	if err != nil {
		return broker.Result{Err: err}, false
	}
	var lostAck error
	if err := p.faults.decide(attempt, m); err != nil {
		if !errors.Is(err, ErrAckLost) {
			return broker.Result{Err: err}, false
		}
		lostAck = herald.Ambiguous(err)
	}
	rec := p.store(m)
	if lostAck != nil {
		return broker.Result{Err: lostAck}, true
	}
	if d := p.faults.delay(); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return broker.Result{Err: herald.Ambiguous(fmt.Errorf(
				"memory broker: event %s: no ack before the deadline: %w", m.Event.ID, ctx.Err()))}, true
		}
	}
	return broker.Result{Receipt: rec.Receipt}, true
}

// precheck counts the attempt and applies the checks that do not depend on
// the fault hooks: closed, ctx done, payload size, down.
func (p *Publisher) precheck(ctx context.Context, m broker.Message) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, fmt.Errorf("event %s: %w", m.Event.ID, ErrClosed)
	}
	p.attempts++
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("memory broker: event %s not sent: %w", m.Event.ID, err)
	}
	if max := p.MaxPayload(); max > 0 && len(m.Event.Payload) > max {
		return 0, herald.Permanent(fmt.Errorf("%w: memory broker: event %s: payload is %d bytes, the broker's limit is %d",
			herald.ErrPayloadTooLarge, m.Event.ID, len(m.Event.Payload), max))
	}
	if err := p.faults.down(); err != nil {
		return 0, err
	}
	return p.attempts, nil
}

// store appends m to the records and wakes waiters.
func (p *Publisher) store(m broker.Message) Record {
	m.Event.Payload = slices.Clone(m.Event.Payload)
	m.Event.Headers = maps.Clone(m.Event.Headers)
	p.mu.Lock()
	defer p.mu.Unlock()
	rec := Record{
		Message: m,
		Headers: broker.Headers(m, "ce-", p.cfg.Source),
		Receipt: herald.Receipt{Stream: p.cfg.Stream, Sequence: uint64(len(p.records) + 1)},
	}
	p.records = append(p.records, rec)
	p.seen[m.Event.ID]++
	close(p.changed)
	p.changed = make(chan struct{})
	return rec
}

// Close implements broker.Publisher: later publishes fail with ErrClosed.
// The records stay readable.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return nil
}
