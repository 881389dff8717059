package nats

import (
	"context"
	"errors"
	"fmt"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// defaultStall bounds the wait for a free pending slot when ctx has no
// deadline.
const defaultStall = 5 * time.Second

// Publish implements broker.Publisher; see the package doc for ordering and
// error classes.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	results := make([]broker.Result, len(msgs))
	if len(msgs) == 0 {
		return results
	}
	if err := p.usable(ctx); err != nil {
		if !errors.Is(err, ErrClosed) {
			// Not connected, or the stream could not be looked up: the
			// server is not there for any event.
			err = herald.Unavailable(err)
		}
		for i, m := range msgs {
			results[i].Err = fmt.Errorf("event %s not sent: %w", m.Event.ID, err)
		}
		return results
	}
	futures := p.send(ctx, msgs, results)
	if sent, answered := p.await(ctx, msgs, futures, results); sent && !answered {
		p.leaderless(ctx, futures, results)
	}
	return results
}

// usable says why nothing can be sent now, if so.
func (p *Publisher) usable(ctx context.Context) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if !p.nc.IsConnected() {
		return fmt.Errorf("nats: not connected to %s (%s), reconnecting", redact(p.cfg.URL), p.nc.Status())
	}
	if !p.ready.Load() {
		return p.ensureStream(ctx)
	}
	return nil
}

// send publishes every message asynchronously, in order, and returns their
// ack futures (nil where sending failed, with the error in results). A
// message that fails here holds back the later ones of its key.
func (p *Publisher) send(ctx context.Context, msgs []broker.Message, results []broker.Result) []jetstream.PubAckFuture {
	futures := make([]jetstream.PubAckFuture, len(msgs))
	var held map[string]bool
	limit := p.serverMax()
	for i, m := range msgs {
		key := m.Event.PartitionKey
		if key != "" && held[key] {
			results[i].Err = fmt.Errorf("nats: event %s %w: an earlier message of partition key %q in this batch failed", m.Event.ID, broker.ErrHeldBack, key)
			continue
		}
		f, err := p.sendOne(ctx, m, limit)
		if err != nil {
			results[i].Err = err
			if key != "" {
				if held == nil {
					held = map[string]bool{}
				}
				held[key] = true
			}
			continue
		}
		futures[i] = f
	}
	return futures
}

// sendOne checks m's size and hands it to the connection.
func (p *Publisher) sendOne(ctx context.Context, m broker.Message, limit int) (jetstream.PubAckFuture, error) {
	id := m.Event.ID
	if m.Destination == "" {
		return nil, herald.Permanent(fmt.Errorf("nats: event %s: empty subject (check the lane's destination)", id))
	}
	stall := defaultStall
	if dl, ok := ctx.Deadline(); ok {
		stall = time.Until(dl)
	}
	if err := ctx.Err(); err != nil || stall <= 0 {
		return nil, fmt.Errorf("nats: event %s not sent: deadline passed before sending: %w", id, context.DeadlineExceeded)
	}
	nm := &natsgo.Msg{Subject: m.Destination, Data: m.Event.Payload, Header: natsgo.Header{}}
	for k, v := range broker.Headers(m, "ce-", p.cfg.Source) {
		nm.Header.Set(k, v)
	}
	dedupe := broker.DedupeID(m)
	nm.Header.Set(jetstream.MsgIDHeader, dedupe)
	// The payload alone is held to MaxPayload, the limit enqueue checks
	// against, so both agree; the whole message to the server's limit.
	if max := limit - HeaderAllowance; len(nm.Data) > max {
		return nil, herald.Permanent(fmt.Errorf(
			"%w: nats: event %s: payload is %d bytes, over the limit of %d (the server's max_payload of %d less %d for headers)",
			herald.ErrPayloadTooLarge, id, len(nm.Data), max, limit, HeaderAllowance))
	}
	if size := len(nm.Data) + headerSize(nm.Header); size > limit {
		return nil, herald.Permanent(fmt.Errorf(
			"%w: nats: event %s: payload is %d bytes (%d with headers), over the server's max_payload of %d bytes (raise max_payload in the server config)",
			herald.ErrPayloadTooLarge, id, len(nm.Data), size, limit))
	}
	f, err := p.js.PublishMsgAsync(nm, jetstream.WithMsgID(dedupe),
		// No client-side retry on "no responders": it would resend this
		// message after later ones of its key.
		jetstream.WithRetryAttempts(0),
		jetstream.WithStallWait(stall))
	if err != nil {
		return nil, classifySend(m, err)
	}
	return f, nil
}

// headerSize is the size of h on the wire, as NATS counts it against
// max_payload ("NATS/1.0\r\n", "k: v\r\n" per value, "\r\n").
func headerSize(h natsgo.Header) int {
	n := len("NATS/1.0\r\n") + 2
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n
}

// await collects the acks in order until ctx ends; an ack still missing
// then is ambiguous. It reports whether any message was sent, and whether
// the server answered any of them (an ack or a refusal).
func (p *Publisher) await(ctx context.Context, msgs []broker.Message, futures []jetstream.PubAckFuture, results []broker.Result) (sent, answered bool) {
	for i, f := range futures {
		if f == nil {
			continue
		}
		sent = true
		select {
		case ack := <-f.Ok():
			results[i].Receipt, answered = receipt(ack), true
		case err := <-f.Err():
			results[i].Err = classifyAck(msgs[i], err)
			answered = answered || !errors.Is(err, jetstream.ErrAsyncPublishTimeout)
		case <-ctx.Done():
			// An ack may have come in together with the deadline.
			select {
			case ack := <-f.Ok():
				results[i].Receipt, answered = receipt(ack), true
			default:
				err := herald.Ambiguous(fmt.Errorf("nats: event %s on %s: no ack before the deadline: %w",
					msgs[i].Event.ID, msgs[i].Destination, ctx.Err()))
				if !p.nc.IsConnected() {
					// No answer because the connection went away.
					err = herald.Unavailable(err)
				}
				results[i].Err = err
			}
		}
	}
	return sent, answered
}

func receipt(ack *jetstream.PubAck) herald.Receipt {
	return herald.Receipt{Stream: ack.Stream, Sequence: ack.Sequence, Duplicate: ack.Duplicate}
}
