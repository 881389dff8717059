package projector

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/projection"
	"github.com/heraldhq/herald/store"
)

// EventFrom says where a projection reads an event's id, type, tenant,
// key and time when its messages were not (all) written by Herald: a
// JSONPath into the body or a header per attribute (projection.EventFrom).
type EventFrom = projection.EventFrom

// Field is one attribute's source in EventFrom (projection.Field).
type Field = projection.Field

// admit gives m the attributes Config.EventFrom reads and reports whether
// a worker should apply it. A message it does not admit is settled here:
// acked when its type is not the projection's, or recorded dead (then
// acked) when a configured attribute could not be read, with the reason
// naming the attribute and its source.
func (p *Projector) admit(ctx context.Context, m broker.Received) (broker.Received, bool) {
	ev, err := p.resolver.Resolve(m.Event)
	if !projection.Failed(err, "type") && !p.cfg.Wants(ev.Type) {
		settle(m.Ack) // not this projection's: no row, no handler
		return m, false
	}
	if err != nil {
		p.refuse(ctx, m, ev, err)
		return m, false
	}
	m.Event = ev
	return m, true
}

// rereadKept gives a failed row's kept event the attributes EventFrom
// reads, for the sweep: the same as when it arrived, unless the row was
// refused (its attributes could not be read), when it is recorded dead
// again and not applied. Type filters are not applied again.
func (p *Projector) rereadKept(ctx context.Context, ev herald.Event) (herald.Event, bool) {
	if p.resolver == nil {
		return ev, true
	}
	resolved, err := p.resolver.Resolve(ev)
	if err != nil {
		p.refuse(ctx, broker.Received{Event: ev}, resolved, err)
		return ev, false
	}
	return resolved, true
}

// refuse records m dead for err and acks it; if the failure cannot be
// recorded (the store is down) it nacks m, for the broker to redeliver.
// The row is keyed by the message's own id (Herald's ce-id, or the broker's
// position id) when the configured id is what is missing, or by a hash of
// the body when the message has no id at all: a redelivery finds it.
func (p *Projector) refuse(ctx context.Context, m broker.Received, ev herald.Event, err error) {
	if ev.ID == "" {
		sum := sha256.Sum256(ev.Payload)
		ev.ID = "body-sha256:" + hex.EncodeToString(sum[:16])
	}
	key := store.ProjectionKey{Table: p.cfg.Table, Projection: p.cfg.Name, Tenant: ev.Tenant, EventID: ev.ID}
	if p.fail(ctx, key, ev, 0, herald.Permanent(err)) {
		p.ack(m)
		return
	}
	settle(m.Nack)
}
