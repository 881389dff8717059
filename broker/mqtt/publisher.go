// Package mqtt publishes events to an MQTT 3.1.1 server (mosquitto,
// EMQX, HiveMQ, a cloud IoT hub) with QoS 1, and subscribes a projector
// to a topic filter through a persistent session.
//
// # The message
//
// The topic is the message's Destination (the lane's template), the QoS
// is 1 and the PUBACK is the acknowledgement; the retained flag is
// Config.Retain. MQTT 3.1.1 has no headers, so the CloudEvents MQTT
// binding's only mode for it is structured: the body is a CloudEvents JSON
// envelope (envelope.go) holding the attributes, the user headers and the
// payload, byte for byte. Config.Body "raw" sends the payload alone
// instead, for consumers that want nothing else (no id travels then).
// MQTT 5 would carry the attributes as user properties beside a body
// that is the payload; this client (paho.mqtt.golang) speaks 3.1.1.
//
// # Acknowledgements and errors
//
// A message is delivered once the server's PUBACK for it came. A payload
// over Config.MaxPayload and a topic MQTT forbids in a publish (empty,
// with + or #, starting with $) are permanent. MQTT 3.1.1 has no negative
// acknowledgement: a QoS 1 publish fails only with its connection, so a
// message without a PUBACK when the connection drops or the batch deadline
// passes is ambiguous and unavailable (the breaker pauses the lanes; no
// attempt is spent), and so is a refused dial. The next batch dials again.
// The server does not dedupe: a message resent after a lost PUBACK is
// stored twice and consumers dedupe by event id (the envelope's id).
package mqtt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/internal/keyed"
)

// ErrClosed is returned for messages published after Close.
var ErrClosed = errors.New("mqtt: publisher is closed")

// Publisher publishes events with QoS 1 over one connection. It is safe
// for concurrent use.
type Publisher struct {
	cfg    Config
	mu     sync.Mutex // guards client and closed; held while dialing
	client paho.Client
	closed bool
}

var (
	_ broker.Publisher = (*Publisher)(nil)
	_ broker.Limiter   = (*Publisher)(nil)
	_ broker.Pinger    = (*Publisher)(nil)
)

// New checks cfg and connects within ctx.
func New(ctx context.Context, cfg Config) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c, err := dial(ctx, cfg, publisherID(cfg), nil)
	if err != nil {
		return nil, err
	}
	return &Publisher{cfg: cfg, client: c}, nil
}

// publisherID is the configured client id, else a fresh random one.
func publisherID(cfg Config) string {
	if cfg.ClientID != "" {
		return cfg.ClientID
	}
	return randomID("herald-")
}

// dial connects one client within ctx. A server that cannot be reached or
// says it is unavailable gives a herald.Unavailable error; a refusal of
// the client (credentials, client id) does not: it is the configuration.
func dial(ctx context.Context, cfg Config, clientID string, setup func(*paho.ClientOptions)) (paho.Client, error) {
	opts, err := cfg.clientOptions(clientID)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		opts.SetConnectTimeout(max(min(cfg.ConnectTimeout, time.Until(dl)), time.Millisecond))
	}
	if setup != nil {
		setup(opts)
	}
	c := paho.NewClient(opts)
	tok := c.Connect()
	<-tok.Done() // bounded by the connect timeout
	if err := tok.Error(); err != nil {
		err = fmt.Errorf("mqtt: connect to %s: %w", cfg.redactedHost(), err)
		if broker.Unreachable(err) || errors.Is(err, packets.ErrorRefusedServerUnavailable) ||
			errors.Is(err, packets.ErrorNetworkError) || ctx.Err() != nil {
			err = herald.Unavailable(err)
		}
		return nil, err
	}
	return c, nil
}

// Guarantees: one connection sends in order and an MQTT server keeps each
// topic's order per client; MQTT has no dedupe.
func (p *Publisher) Guarantees() broker.Guarantees { return broker.Guarantees{KeyOrder: true} }

// MaxPayload implements broker.Limiter.
func (p *Publisher) MaxPayload() int { return p.cfg.MaxPayload }

// Ping implements broker.Pinger: a live connection, dialing one if the
// last dropped.
func (p *Publisher) Ping(ctx context.Context) error {
	_, err := p.connection(ctx)
	return err
}

// Close disconnects. Publish after Close fails with ErrClosed.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.client != nil {
		p.client.Disconnect(100)
		p.client = nil
	}
	return nil
}

// connection returns a live client, dialing a new one if the last dropped.
func (p *Publisher) connection(ctx context.Context) (paho.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if p.client != nil && p.client.IsConnectionOpen() {
		return p.client, nil
	}
	if p.client != nil {
		p.client.Disconnect(0)
		p.client = nil
	}
	c, err := dial(ctx, p.cfg, publisherID(p.cfg), nil)
	if err != nil {
		// Nothing about any event.
		return nil, herald.Unavailable(fmt.Errorf("not sent: %w", err))
	}
	p.client = c
	return c, nil
}

// Publish sends every message with QoS 1, in order, and waits for the
// PUBACKs; one result per message, in order, by ctx's deadline.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	results := make([]broker.Result, len(msgs))
	if len(msgs) == 0 {
		return results
	}
	c, err := p.connection(ctx)
	if err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	tokens := p.send(ctx, c, msgs, results)
	for i, tok := range tokens {
		if tok == nil {
			continue
		}
		select {
		case <-tok.Done():
			if err := tok.Error(); err != nil {
				results[i].Err = classify(msgs[i], err)
			} else {
				results[i].Receipt = herald.Receipt{MessageID: msgs[i].Event.ID}
			}
		case <-ctx.Done():
			// No PUBACK: the server is not answering.
			results[i].Err = herald.Unavailable(herald.Ambiguous(
				fmt.Errorf("mqtt: event %s on %s: no PUBACK by the deadline: %w", msgs[i].Event.ID, msgs[i].Destination, context.Cause(ctx))))
		}
	}
	return results
}

// send hands each message to the connection in order and returns their
// tokens; a message that cannot be sent gets its error in results and
// holds back the later messages of its key.
func (p *Publisher) send(ctx context.Context, c paho.Client, msgs []broker.Message, results []broker.Result) []paho.Token {
	tokens := make([]paho.Token, len(msgs))
	keyed.SendInOrder(msgs, results, func(i int) error {
		if ctx.Err() != nil {
			return fmt.Errorf("mqtt: not sent: %w", context.Cause(ctx))
		}
		body, err := p.body(msgs[i])
		if err != nil {
			return herald.Permanent(err)
		}
		tokens[i] = c.Publish(msgs[i].Destination, 1, p.cfg.Retain, body)
		return nil
	})
	return tokens
}

// body is the message's MQTT payload, or why it can never be sent.
func (p *Publisher) body(m broker.Message) ([]byte, error) {
	ev := m.Event
	if len(ev.Payload) > p.cfg.MaxPayload {
		return nil, fmt.Errorf("%w: mqtt: event %s: payload is %d bytes, the limit (max_payload) is %d",
			herald.ErrPayloadTooLarge, ev.ID, len(ev.Payload), p.cfg.MaxPayload)
	}
	if err := checkTopic(m.Destination); err != nil {
		return nil, fmt.Errorf("mqtt: event %s: %w", ev.ID, err)
	}
	if p.cfg.Body == BodyRaw {
		return ev.Payload, nil
	}
	return encodeEnvelope(m, p.cfg.Source)
}

// checkTopic refuses a topic name MQTT does not allow in a PUBLISH.
func checkTopic(topic string) error {
	switch {
	case topic == "":
		return errors.New("topic (destination) is empty")
	case len(topic) > 65535:
		return fmt.Errorf("topic (destination) is %d bytes, MQTT allows 65535", len(topic))
	case strings.ContainsAny(topic, "+#\x00"):
		return fmt.Errorf("topic (destination) %q has a wildcard (+, #) or NUL, which a publish cannot use", topic)
	case strings.HasPrefix(topic, "$"):
		return fmt.Errorf("topic (destination) %q starts with $, which is the server's ($SYS)", topic)
	case !utf8.ValidString(topic):
		return fmt.Errorf("topic (destination) %q is not UTF-8", topic)
	}
	return nil
}

// classify sorts the error of a publish token. Not connected means nothing
// was sent; anything else came after the packet was handed over (MQTT
// 3.1.1 has no negative PUBACK: the connection went), so it may be stored.
func classify(m broker.Message, err error) error {
	if errors.Is(err, paho.ErrNotConnected) {
		return herald.Unavailable(fmt.Errorf("mqtt: event %s to %s not sent: %w", m.Event.ID, m.Destination, err))
	}
	return herald.Unavailable(herald.Ambiguous(fmt.Errorf("mqtt: event %s on %s: %w", m.Event.ID, m.Destination, err)))
}
