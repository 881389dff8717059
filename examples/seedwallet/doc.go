// Package seedwallet adopts an existing service's outbox as it is: the
// wallet service of the system Herald comes from, whose wallet_outbox
// table (its own column names, five status values, epoch-millisecond
// times) an old worker of its own relays to RocketMQ as a JSON wallet
// message. Herald relays the same table through a lane's columns mapping
// and body template (Lane), producing the old worker's message field for
// field, and a gift wall projection (NewWall) reads the event id, type,
// tenant and key from that message's body, so the messages the old worker
// published and Herald's land in one ledger and each gift counts once.
//
// OldWorker stands in for the service's own worker; the test in this
// package runs it and Herald on one table, against rmqfake, in both of
// RocketMQ's tag modes (one constant tag, or the event type), on SQLite,
// MariaDB and PostgreSQL. docs/adopt.md explains the mapping.
package seedwallet
