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

// ddl is wallet_outbox as the service created it, per database ({{T}} is
// the table's name); the two indexes serve its worker's claims and
// Herald's alike.
var ddl = map[string]string{
	"sqlite": `CREATE TABLE {{T}} (
  app_code TEXT NOT NULL, event_id TEXT NOT NULL PRIMARY KEY, event_type TEXT NOT NULL,
  transaction_id TEXT NOT NULL, command_id TEXT NOT NULL, user_id INTEGER NOT NULL, asset_type TEXT NOT NULL,
  available_delta INTEGER NOT NULL, frozen_delta INTEGER NOT NULL, payload_json TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL, status TEXT NOT NULL DEFAULT 'pending', retry_count INTEGER NOT NULL DEFAULT 0,
  next_retry_at_ms INTEGER NOT NULL DEFAULT 0, lock_until_ms INTEGER NOT NULL DEFAULT 0,
  worker_id TEXT NOT NULL DEFAULT '', last_error TEXT NOT NULL DEFAULT '')`,
	"mysql": `CREATE TABLE {{T}} (
  app_code VARCHAR(32) NOT NULL, event_id VARCHAR(64) NOT NULL PRIMARY KEY, event_type VARCHAR(64) NOT NULL,
  transaction_id VARCHAR(64) NOT NULL, command_id VARCHAR(64) NOT NULL, user_id BIGINT NOT NULL,
  asset_type VARCHAR(16) NOT NULL, available_delta BIGINT NOT NULL, frozen_delta BIGINT NOT NULL,
  payload_json JSON NOT NULL, created_at_ms BIGINT NOT NULL, status VARCHAR(16) NOT NULL DEFAULT 'pending',
  retry_count INT NOT NULL DEFAULT 0, next_retry_at_ms BIGINT NOT NULL DEFAULT 0, lock_until_ms BIGINT NOT NULL DEFAULT 0,
  worker_id VARCHAR(128) NOT NULL DEFAULT '', last_error VARCHAR(1024) NOT NULL DEFAULT '',
  KEY {{T}}_due (status, next_retry_at_ms), KEY {{T}}_lock (status, lock_until_ms)) ENGINE=InnoDB`,
	"postgres": `CREATE TABLE {{T}} (
  app_code TEXT NOT NULL, event_id TEXT NOT NULL PRIMARY KEY, event_type TEXT NOT NULL,
  transaction_id TEXT NOT NULL, command_id TEXT NOT NULL, user_id BIGINT NOT NULL, asset_type TEXT NOT NULL,
  available_delta BIGINT NOT NULL, frozen_delta BIGINT NOT NULL, payload_json JSONB NOT NULL,
  created_at_ms BIGINT NOT NULL, status TEXT NOT NULL DEFAULT 'pending', retry_count INT NOT NULL DEFAULT 0,
  next_retry_at_ms BIGINT NOT NULL DEFAULT 0, lock_until_ms BIGINT NOT NULL DEFAULT 0,
  worker_id TEXT NOT NULL DEFAULT '', last_error TEXT NOT NULL DEFAULT '')`,
}

// indexes are the claim indexes where the DDL cannot declare them inline.
var indexes = []string{
	`CREATE INDEX {{T}}_due ON {{T}} (status, next_retry_at_ms)`,
	`CREATE INDEX {{T}}_lock ON {{T}} (status, lock_until_ms)`,
}

// TableDDL returns the statements that create the wallet table named
// table on the database of the dialect named dialect (sqlite, mysql,
// postgres).
func TableDDL(dialect, table string) []string {
	r := strings.NewReplacer("{{T}}", table)
	out := []string{r.Replace(ddl[dialect])}
	if dialect != "mysql" {
		for _, ix := range indexes {
			out = append(out, r.Replace(ix))
		}
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
}

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
// RocketMQ publisher, in the tag mode the consumers expect).
func Lane(table string, pub broker.Publisher) relay.Lane {
	m := Mapping
	return relay.Lane{Name: "wallet", Table: table, Publisher: pub, Destination: broker.MustParseTemplate(Topic),
		PollInterval: 50 * time.Millisecond, PublishTimeout: 5 * time.Second,
		Columns: m.Columns, Statuses: m.Statuses, TimeUnit: m.TimeUnit, Body: m.Body}
}
