// Package herald is a transactional outbox: enqueue domain events in the
// same database transaction as the business rows, and let a relay publish
// them to a broker, at least once, in order per key where asked.
//
// # Enqueue
//
//	ob, _ := herald.NewOutbox(herald.OutboxConfig{Dialect: sqlite.Dialect})
//	tx, _ := db.BeginTx(ctx, nil)
//	// … business writes …
//	err := ob.Enqueue(ctx, tx, herald.Event{Topic: "wallet", Type: "WalletGiftDebited", Payload: body})
//	// commit or roll back: the event goes with the business rows.
//
// Any program can enqueue with a plain SQL INSERT instead (docs/sql.md).
//
// # Errors
//
// Publishers classify failures: Permanent errors move an event to dead at
// once, Ambiguous ones (it may have been published) and all others are
// retried with backoff. Consumers dedupe by event id.
package herald
