package seedwallet

import (
	"strings"
	"time"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// Topic is the RocketMQ topic the wallet messages go to.
const Topic = "wallet_topic"

// Event types of the wallet table; the gift wall applies WalletGiftDebited.
const (
	WalletGiftDebited = "WalletGiftDebited"
	WalletRecharged   = "WalletRecharged"
)

// sqlTypes are the column types the tables use on one database.
type sqlTypes struct{ key, text, long, bigint, json, tail string }

var typesOf = map[string]sqlTypes{
	"sqlite":   {key: "TEXT", text: "TEXT", long: "TEXT", bigint: "INTEGER", json: "TEXT"},
	"mysql":    {key: "VARCHAR(64)", text: "VARCHAR(128)", long: "VARCHAR(1024)", bigint: "BIGINT", json: "JSON", tail: " ENGINE=InnoDB"},
	"postgres": {key: "TEXT", text: "TEXT", long: "TEXT", bigint: "BIGINT", json: "JSONB"},
}

// walletColumns are wallet_outbox's own columns; workerColumns those of
// its worker's bookkeeping, which the room outbox shares.
const (
	walletColumns = `app_code {{TEXT}} NOT NULL, event_id {{KEY}} NOT NULL PRIMARY KEY, event_type {{TEXT}} NOT NULL,
  transaction_id {{TEXT}} NOT NULL, command_id {{TEXT}} NOT NULL, user_id {{BIGINT}} NOT NULL,
  asset_type {{TEXT}} NOT NULL, available_delta {{BIGINT}} NOT NULL, frozen_delta {{BIGINT}} NOT NULL,
  payload_json {{JSON}} NOT NULL, `
	workerColumns = `created_at_ms {{BIGINT}} NOT NULL, status {{TEXT}} NOT NULL DEFAULT 'pending',
  retry_count INT NOT NULL DEFAULT 0, next_retry_at_ms {{BIGINT}} NOT NULL DEFAULT 0,
  lock_until_ms {{BIGINT}} NOT NULL DEFAULT 0, worker_id {{TEXT}} NOT NULL DEFAULT '',
  last_error {{LONG}} NOT NULL DEFAULT ''`
)

// indexes serve the old worker's claims and Herald's alike.
var indexes = []string{
	`CREATE INDEX {{T}}_due ON {{T}} (status, next_retry_at_ms)`,
	`CREATE INDEX {{T}}_lock ON {{T}} (status, lock_until_ms)`,
}

// TableDDL returns the statements that create the wallet table named
// table as the service created it (its own column names, five status
// values, epoch-millisecond times) on the database of the dialect named
// dialect (sqlite, mysql, postgres).
func TableDDL(dialect, table string) []string { return outboxDDL(dialect, table, walletColumns) }

// outboxDDL returns the CREATE TABLE of an outbox with columns, the
// worker's columns and the claim indexes.
func outboxDDL(dialect, table, columns string) []string {
	ty := typesOf[dialect]
	r := strings.NewReplacer("{{T}}", table, "{{KEY}}", ty.key, "{{TEXT}}", ty.text, "{{LONG}}", ty.long,
		"{{BIGINT}}", ty.bigint, "{{JSON}}", ty.json)
	out := []string{r.Replace("CREATE TABLE {{T}} (" + columns + workerColumns + ")" + ty.tail)}
	for _, ix := range indexes {
		out = append(out, r.Replace(ix))
	}
	return out
}

// Mapping is how Herald reads wallet_outbox (docs/adopt.md).
var Mapping = store.Mapping{
	Columns: store.Columns{ID: "event_id", Type: "event_type", Tenant: "app_code", Key: "user_id",
		Payload: "payload_json", CreatedAt: "created_at_ms", Status: "status", Attempts: "retry_count",
		NextAttempt: "next_retry_at_ms", LeaseUntil: "lock_until_ms", LeaseOwner: "worker_id", LastError: "last_error"},
	Statuses: store.Statuses{Pending: store.StatusValues{"pending", "retryable"},
		InFlight: "delivering", Delivered: "delivered", Dead: "dead"},
	TimeUnit: store.TimeEpochMillis,
	Body:     Body,
	// The old worker's keys after the event id: the RocketMQ publisher's
	// key_headers (KeyHeaders) name these headers.
	HeaderColumns: map[string]string{"transactionId": "transaction_id", "commandId": "command_id"},
}

// KeyHeaders are the headers whose values follow the event id in each
// message's RocketMQ keys, as the old worker sets them: give them to the
// publisher (rocketmq.Config.KeyHeaders).
var KeyHeaders = []string{"transactionId", "commandId"}

// Body is the wallet message built from a row, field for field as the old
// worker builds it (Message).
var Body = []store.BodyField{
	{Field: "eventId", Column: "event_id"}, {Field: "eventType", Column: "event_type"},
	{Field: "appCode", Column: "app_code"}, {Field: "transactionId", Column: "transaction_id"},
	{Field: "commandId", Column: "command_id"}, {Field: "userId", Column: "user_id"},
	{Field: "assetType", Column: "asset_type"}, {Field: "availableDelta", Column: "available_delta"},
	{Field: "frozenDelta", Column: "frozen_delta"}, {Field: "source", Const: Source},
	{Field: "payload", Payload: store.PayloadRaw},
}

// Source is the wallet message's constant source field.
const Source = "wallet"

// Lane relays the wallet table named table to Topic through pub (a
// RocketMQ publisher, in the tag mode the consumers expect, with
// KeyHeaders).
func Lane(table string, pub broker.Publisher) relay.Lane {
	m := Mapping
	return relay.Lane{Name: "wallet", Table: table, Publisher: pub, Destination: broker.MustParseTemplate(Topic),
		PollInterval: 50 * time.Millisecond, PublishTimeout: 5 * time.Second,
		Columns: m.Columns, Statuses: m.Statuses, TimeUnit: m.TimeUnit, Body: m.Body, HeaderColumns: m.HeaderColumns}
}
