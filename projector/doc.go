// Package projector builds read models from events exactly once, fed by a
// broker (broker.Subscriber: NATS JetStream, Kafka, RabbitMQ, Redis
// Streams) or straight from an outbox table in the same database
// (OutboxSource, no broker at all).
//
// The user writes one Handler, func(ctx, tx, ev) error, that updates the
// read model through tx. For every event the projector opens a transaction
// on the read model's database, claims the event's row in the projection
// table, runs the handler, marks the row done and commits; only then does
// it acknowledge the message. A redelivery (a broker's at-least-once, a
// crash between commit and ack, two consumers racing) finds the row done
// and is acknowledged without running the handler.
//
//	p, _ := projector.New(projector.Config{Settings: projector.Settings{Name: "giftwall"}, Store: st, Handler: applyGift})
//	_ = p.Migrate(ctx)
//	sub, _ := nats.NewSubscriber(ctx, nats.SubscriberConfig{Stream: "EVENTS", Durable: "giftwall"})
//	err := p.Run(ctx, sub)
//
// # The projection row's state machine
//
// One row per (projection, tenant, event id) in the projection table
// (store.DefaultProjectionTable):
//
//	(no row) ──claim: INSERT processing──▶ processing ──handler ok, same tx──▶ done
//	                                          │  ▲
//	          handler error: rollback, then   │  │ claim: UPDATE, when
//	          Fail in its own short tx        ▼  │ next_attempt_at <= now
//	                                        failed ─────────────────────────▶ dead
//	                                          ▲    attempts = max_attempts,
//	                                          │    or a herald.Permanent error
//	                                          └──── replay (attempts = 0) ── dead
//
// The claim, the handler and the done mark share one transaction, so a
// processing row is normally seen by other transactions only as a lock:
// a concurrent claim of the same key waits for it and then finds done (the
// other committed) or no row (it rolled back, and the claim proceeds). A
// processing row that was committed (by a tool, or a store that claims
// ahead) is taken over once lease_until has passed. done and dead are final:
// they are never claimed, and Fail never changes them. Every time comes
// from the database clock.
//
// # Failures
//
// A handler error rolls the transaction back (read model and claim
// together), then Fail records it: attempts + 1, last_error, next attempt
// after an exponential backoff, and the event itself (so that it can be
// replayed once the source has forgotten it). The worker retries the event
// in place after the backoff; that holds back only its own shard (its key's
// later events, which keeps their order). After MaxAttempts, or at once for
// a herald.Permanent error (a bad payload), the row goes dead, the message
// is acknowledged (the broker stops redelivering it) and the shard moves on.
// Dead events stay visible (herald projection status, ListProjection) and
// replayable (herald projection replay NAME --dead): replay makes them
// failed and due, and every running projector's sweep (SweepInterval)
// applies them from the kept event.
//
// # Concurrency
//
// Run spreads messages over Workers shards by tenant and partition key, so
// one key's events are applied one at a time in the order received; events
// without a key spread by event id. A shard applies what is waiting in it
// in one transaction (ApplyBatch: one commit for up to Config.ApplyBatch
// events), stopping at the first handler failure. Several processes may
// run the same projection: the projection table's primary key and the
// claim inside the transaction make them apply each event once; sources
// that give one key to one consumer (Kafka partitions) keep key order
// across processes too.
//
// # Sources
//
// OutboxSource reads the outbox table in id order and skips events the
// projection finished; commit order is not id order, so it never trusts an
// id watermark (see OutboxSource). Broker subscribers live in the broker
// packages; broker.Rewinder lets Rebuild start one over.
//
// # Messages Herald did not write
//
// Config.EventFrom reads the event id, type, tenant, key and time from the
// message body (a JSONPath singular query such as $.eventId) or a named
// header instead of Herald's CloudEvents attributes, so that the messages
// an existing service's own outbox worker published and Herald's copies of
// the same rows share one ledger row each. A message whose configured
// attribute cannot be read goes dead at once, the reason naming the
// attribute and its path; it is never applied under another id.
//
// # Retention
//
// Done rows are the dedupe memory. Config.DoneRetention deletes them after
// a horizon (default: never); a message redelivered after its row was
// deleted is applied again, so the horizon must exceed the longest
// redelivery the source can produce (docs/projector.md).
package projector
