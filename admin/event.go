package admin

import (
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/store"
)

// EventSummary is one event in searches, event lists and replay samples
// (GET /api/lanes/{lane}/events, `herald replay --dry-run --json`): ids,
// type, state and times, never the payload.
type EventSummary struct {
	ID           int64        `json:"id"`
	EventID      string       `json:"event_id"`
	Type         string       `json:"type"`
	Topic        string       `json:"topic"`
	PartitionKey string       `json:"partition_key"`
	Tenant       string       `json:"tenant"`
	Status       store.Status `json:"status"`
	Attempts     int          `json:"attempts"`
	LastError    string       `json:"last_error,omitempty"`
	CreatedAt    time.Time    `json:"created_at"`
	// DeliveredAt and DiedAt are set for delivered and dead events.
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
	DiedAt      *time.Time `json:"died_at,omitempty"`
}

// NewEventSummary summarizes a row.
func NewEventSummary(r store.Record) EventSummary {
	return EventSummary{ID: r.ID, EventID: r.Event.ID, Type: r.Event.Type, Topic: r.Event.Topic,
		PartitionKey: r.Event.PartitionKey, Tenant: r.Event.Tenant, Status: r.Status, Attempts: r.Attempts,
		LastError: r.LastError, CreatedAt: r.Event.CreatedAt.UTC(), DeliveredAt: timeOrNil(r.DeliveredAt),
		DiedAt: timeOrNil(r.DiedAt)}
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// MaxPayloadShown is the most payload bytes the event page returns.
const MaxPayloadShown = 64 << 10

// EventDetail is one event with its payload, headers, receipt and replay
// history (GET /api/lanes/{lane}/events/{id}).
type EventDetail struct {
	EventSummary
	Headers map[string]string `json:"headers"`
	// Payload is the payload as text when it is valid UTF-8, else
	// PayloadBase64 holds it; both are cut at MaxPayloadShown bytes.
	Payload       *string `json:"payload,omitempty"`
	PayloadBase64 []byte  `json:"payload_base64,omitempty"`
	PayloadBytes  int     `json:"payload_bytes"`
	// PayloadTruncated says the payload is longer than what is shown.
	PayloadTruncated bool `json:"payload_truncated,omitempty"`
	// PayloadHidden says payload and headers were left out: they are
	// shown only to callers with the admin token (see Hide).
	PayloadHidden bool `json:"payload_hidden,omitempty"`
	// HeadersError says why the stored headers are not a JSON object of
	// strings (a row written by plain SQL): they are then not shown.
	HeadersError string `json:"headers_error,omitempty"`
	// HeadersStored is the headers column verbatim when it is invalid
	// (HeadersError), cut at MaxPayloadShown bytes; hidden with the
	// payload.
	HeadersStored *string `json:"headers_stored,omitempty"`
	// HeadersCount is how many headers the event has, hidden or not.
	HeadersCount int `json:"headers_count"`
	// Errors are the last failed attempts the row keeps
	// (store.MaxAttemptErrors), oldest first; empty on a mapped table,
	// which keeps LastError only.
	Errors      []store.AttemptError `json:"errors"`
	Receipt     json.RawMessage      `json:"receipt,omitempty"`
	AvailableAt time.Time            `json:"available_at"`
	LeaseOwner  string               `json:"lease_owner,omitempty"`
	Replays     []ReplayEntry        `json:"replays"`
}

// ReplayEntry is one replay of an event, from herald_replays.
type ReplayEntry struct {
	From   store.Status `json:"from"`
	At     time.Time    `json:"at"`
	By     string       `json:"by"`
	Reason string       `json:"reason,omitempty"`
}

// NewEventDetail is r in full, with its replay history.
func NewEventDetail(r store.Record, history []store.Replay) EventDetail {
	d := EventDetail{EventSummary: NewEventSummary(r), Headers: r.Event.Headers, HeadersCount: len(r.Event.Headers),
		PayloadBytes: len(r.Event.Payload),
		AvailableAt:  r.AvailableAt.UTC(), LeaseOwner: r.LeaseOwner, Replays: make([]ReplayEntry, len(history))}
	if d.Headers == nil {
		d.Headers = map[string]string{}
	}
	if r.HeadersErr != nil {
		d.HeadersError = r.HeadersErr.Error()
		var he *store.HeadersError
		if errors.As(r.HeadersErr, &he) {
			stored, _ := asText([]byte(he.Stored[:min(len(he.Stored), MaxPayloadShown)]), len(he.Stored) > MaxPayloadShown)
			d.HeadersStored = &stored
		}
	}
	d.Errors = make([]store.AttemptError, len(r.Errors))
	for i, e := range r.Errors {
		d.Errors[i] = store.AttemptError{Attempt: e.Attempt, At: e.At.UTC(), Error: e.Error}
	}
	p := r.Event.Payload
	if len(p) > MaxPayloadShown {
		p, d.PayloadTruncated = p[:MaxPayloadShown], true
	}
	if text, ok := asText(p, d.PayloadTruncated); ok {
		d.Payload = &text
	} else {
		d.PayloadBase64 = p
	}
	if rc := r.Receipt.JSON(); rc != "" && rc != "{}" {
		d.Receipt = json.RawMessage(rc)
	}
	for i, h := range history {
		d.Replays[i] = ReplayEntry{From: h.From, At: h.At.UTC(), By: h.By, Reason: h.Reason}
	}
	return d
}

// asText returns p as a string if it is UTF-8 text; a cut payload may end
// in the first bytes of a rune, which are dropped.
func asText(p []byte, cut bool) (string, bool) {
	for drop := 0; drop < utf8.UTFMax && drop <= len(p); drop++ {
		if utf8.Valid(p[:len(p)-drop]) {
			return string(p[:len(p)-drop]), true
		}
		if !cut {
			break
		}
	}
	return "", false
}

// Hide leaves out the payload and headers, which may carry personal data,
// for a caller without the admin token.
func (d *EventDetail) Hide() {
	d.Payload, d.PayloadBase64, d.PayloadTruncated, d.PayloadHidden = nil, nil, false, true
	d.Headers, d.HeadersStored = map[string]string{}, nil
}
