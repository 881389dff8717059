// Package giftwall is Herald's reference application: the event flow of the
// voice-room backend Herald comes from, rebuilt on Herald's public API.
//
//   - Wallet: users hold balances per asset type (available and frozen).
//     DebitGift debits a sender in one transaction — idempotent by command
//     id, refusing an insufficient balance — writes the ledger transaction
//     and its deltas, and enqueues WalletGiftDebited in the same
//     transaction (the transactional outbox).
//   - Rooms: RoomEntered, RoomLeft, GiftBroadcast, RocketIgnited and
//     RocketLaunched on the room lane, ordered per room. A RocketIgnited
//     event has a before-publish step (relay.Lane.BeforePublish) that
//     schedules the delayed RocketLaunched event (herald.Event.AvailableAt)
//     before the ignition is published; if scheduling fails the ignition
//     stays retryable, and a retry cannot schedule twice (the launch's event
//     id is derived from the ignition's).
//   - Robots: robot display events on their own table and lane, discarded
//     instead of published once older than the lane's discard_after (a late
//     gift animation is worse than none), with retention cleanup.
//   - Gift wall: a projector applies WalletGiftDebited, received from the
//     broker, to user_gift_wall (tenant, user, gift, total count, last
//     received at) exactly once.
//
// Every row and event carries a tenant; the demo runs two.
//
// The SQL here is the application's own (its tables, not Herald's): it is
// written once for SQLite, MySQL/MariaDB and PostgreSQL, with the few
// upserts that differ chosen by dialect.
//
// Demo runs the whole system from a config file with generated traffic;
// `herald demo` is its terminal front end. See README.md.
package giftwall
