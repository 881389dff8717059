package relay

import (
	"fmt"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// check is the pre-publish step: it refuses a claimed row that no retry
// can fix, before any broker sees it. Rows written by plain SQL from other
// languages bypass Enqueue's checks, so the relay makes them again; a
// refused row goes dead at once (a permanent error) with a reason an
// operator can act on, then fix the row and replay it. Nil means publish.
func (w *worker) check(rec store.Record) error {
	ev := rec.Event
	switch {
	case ev.ID == "":
		// Consumers and brokers dedupe by event id: rows sharing the empty
		// one would be taken for copies of each other and dropped.
		return badRow("row has an empty event_id")
	case ev.Topic == "":
		return badRow("row has an empty topic")
	case ev.Type == "":
		return badRow("row has an empty event_type")
	case rec.HeadersErr != nil:
		return badRow(rec.HeadersErr.Error())
	case rec.BodyErr != nil:
		return badRow(rec.BodyErr.Error())
	}
	if field := w.lane.Destination.EmptyField(ev); field != "" {
		// "orders..GiftSent", or no destination at all: a broker would
		// refuse it, or worse, take it somewhere nobody reads.
		return badRow(fmt.Sprintf("row has an empty %s, which the lane's destination needs", field))
	}
	if limit, whose := w.payloadLimit(); limit > 0 && len(ev.Payload) > limit {
		return herald.Permanent(fmt.Errorf("%w: payload is %d bytes, %s is %d",
			herald.ErrPayloadTooLarge, len(ev.Payload), whose, limit))
	}
	return nil
}

// badRow is the permanent error of a row that Enqueue would have refused.
func badRow(why string) error {
	return herald.Permanent(fmt.Errorf("%w: %s", herald.ErrInvalidEvent, why))
}

// payloadLimit is the smaller of the lane's max_payload and the broker's
// own limit (broker.Limiter), and which one it is; 0 when neither is set.
func (w *worker) payloadLimit() (int, string) {
	lane, broker := w.lane.MaxPayload, w.maxPayload
	switch {
	case lane > 0 && (broker <= 0 || lane <= broker):
		return lane, "lane max_payload"
	case broker > 0:
		return broker, "the broker's limit"
	}
	return 0, ""
}
