// Package stdout is a Publisher that writes each message as one JSON line,
// for development, demos and piping into other tools.
package stdout

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// ErrClosed is returned for messages published after Close.
var ErrClosed = errors.New("stdout: publisher is closed")

// Config configures a Publisher.
type Config struct {
	// Writer receives the lines. Defaults to os.Stdout.
	Writer io.Writer
	// Source is the CloudEvents source. Defaults to broker.DefaultSource.
	Source string
}

// Publisher writes JSON lines. It is safe for concurrent use; a line is
// never interleaved with another.
type Publisher struct {
	cfg    Config
	mu     sync.Mutex
	enc    *json.Encoder
	seq    uint64
	closed bool
}

// Line is one message as written.
type Line struct {
	SpecVersion   string            `json:"specversion"`
	ID            string            `json:"id"`
	Type          string            `json:"type"`
	Source        string            `json:"source"`
	Subject       string            `json:"subject,omitempty"`
	Tenant        string            `json:"tenant,omitempty"`
	Topic         string            `json:"topic"`
	Destination   string            `json:"destination"`
	Time          time.Time         `json:"time,omitzero"`
	Headers       map[string]string `json:"headers,omitempty"` // user headers, reserved names renamed (broker.UserHeaders)
	Payload       json.RawMessage   `json:"payload,omitempty"`
	PayloadBase64 []byte            `json:"payload_base64,omitempty"`
}

// New returns a Publisher for cfg.
func New(cfg Config) *Publisher {
	if cfg.Writer == nil {
		cfg.Writer = os.Stdout
	}
	if cfg.Source == "" {
		cfg.Source = broker.DefaultSource
	}
	enc := json.NewEncoder(cfg.Writer)
	// Keep JSON payloads as written: no \u003c for '<' and the like.
	enc.SetEscapeHTML(false)
	return &Publisher{cfg: cfg, enc: enc}
}

// Publish writes one line per message, in order. A write error fails that
// message (retryable) and the rest of the batch.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	results := make([]broker.Result, len(msgs))
	p.mu.Lock()
	defer p.mu.Unlock()
	var failed error
	for i, m := range msgs {
		switch {
		case p.closed:
			results[i].Err = ErrClosed
		case failed != nil:
			results[i].Err = failed
		case ctx.Err() != nil:
			results[i].Err = ctx.Err()
		default:
			if err := p.enc.Encode(p.line(m)); err != nil {
				failed = err
				results[i].Err = err
				continue
			}
			p.seq++
			results[i].Receipt = herald.Receipt{Stream: "stdout", Sequence: p.seq}
		}
	}
	return results
}

func (p *Publisher) line(m broker.Message) Line {
	ev := m.Event
	l := Line{SpecVersion: broker.SpecVersion, ID: ev.ID, Type: ev.Type, Source: p.cfg.Source, Subject: ev.PartitionKey, Tenant: ev.Tenant,
		Topic: ev.Topic, Destination: m.Destination, Time: ev.CreatedAt.UTC()}
	if len(ev.Headers) > 0 {
		l.Headers = broker.UserHeaders(m)
	}
	if json.Valid(ev.Payload) {
		l.Payload = ev.Payload
	} else {
		l.PayloadBase64 = ev.Payload
	}
	return l
}

// Guarantees: lines are written in publish order; nothing is deduped.
func (p *Publisher) Guarantees() broker.Guarantees {
	return broker.Guarantees{KeyOrder: true}
}

// Close makes later publishes fail; there is nothing to flush.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return nil
}
