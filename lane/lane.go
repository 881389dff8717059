// Package lane declares a relay lane: its settings, with the YAML keys a
// config file gives them, their defaults and their rules, in one place. It
// is a leaf (the root package and the seams only), so that package config
// reads `lanes` entries without linking the relay; relay.Lane is Lane.
package lane

import (
	"context"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// Ordering is a lane's ordering promise.
type Ordering string

// The ordering modes.
const (
	// OrderingNone publishes rows in any order, all in parallel.
	OrderingNone Ordering = "none"
	// OrderingKey publishes the events of one partition key in commit
	// order, also across retries and replicas; other keys keep flowing.
	OrderingKey Ordering = "key"
)

// OnDead is what an ordered lane does with a key whose head event went dead.
type OnDead string

// The dead-head policies.
const (
	// OnDeadPark holds the key's later events until an operator replays or
	// purges the dead one.
	OnDeadPark OnDead = "park"
	// OnDeadSkip lets the key's later events go on.
	OnDeadSkip OnDead = "skip"
)

// OnDelivered is what a log lane's marker does with the rows of delivered
// events (docs/loglanes.md).
type OnDelivered string

const (
	// OnDeliveredMark sets their status to delivered and keeps their
	// receipts, as a polling lane's marks do; retention deletes them later.
	OnDeliveredMark OnDelivered = "mark"
	// OnDeliveredDelete deletes them: no receipts and no delivered rows to
	// count or look up, for less of the database's work per event (on
	// PostgreSQL a delete leaves the row's index entries to vacuum, where
	// the mark's update writes new ones in every index).
	OnDeliveredDelete OnDelivered = "delete"
	// OnDeliveredLeave leaves them as they are, for the table's own
	// retention to delete: only on a mapped table (docs/adopt.md), whose
	// service's cleanup already does that.
	OnDeliveredLeave OnDelivered = "leave"
)

// Retention is how long finished rows are kept. Zero keeps them forever.
type Retention struct {
	// Delivered deletes delivered rows after this long (0: never).
	Delivered time.Duration `yaml:"delivered"`
	// Dead deletes dead rows after this long (0: never).
	Dead time.Duration `yaml:"dead"`
	// Active deletes rows still pending after this long (0: never).
	Active time.Duration `yaml:"active"`
	// Interval is how often cleanup runs, at most once per interval across
	// all the lane's workers and processes. Defaults to 1m.
	Interval time.Duration `yaml:"interval"`
	// BatchSize bounds the rows deleted per statement. Defaults to 1000.
	BatchSize int `yaml:"batch_size"`
}

// Enabled says whether any retention is set.
func (r Retention) Enabled() bool { return r.Delivered > 0 || r.Dead > 0 || r.Active > 0 }

// BeforePublish runs before a message is published. An error keeps the event
// retryable (or dead, if permanent) and it is not published this time.
type BeforePublish func(ctx context.Context, m broker.Message) error

// Lane is one outbox table (or a filtered part of one) relayed to one broker.
// Its settings are declared here once, with the YAML keys a config file
// gives them (package config decodes `lanes` entries into Lane), their
// defaults (WithDefaults) and their rules (Validate); relay.Lane is this
// type.
type Lane struct {
	// Name names the lane in logs, worker ids and status. Required.
	Name string `yaml:"name"`
	// Table is the outbox table. Defaults to herald.DefaultTable.
	Table string `yaml:"table"`
	// Tenant, when set, limits the lane to one tenant.
	Tenant string `yaml:"tenant"`
	// FairTenants shares each claimed batch between the named tenants that
	// have claimable rows, so that one tenant's backlog does not hold up
	// the others' events behind it (see fair.go). Off by default: a claim
	// then takes the lane's oldest rows, whoever's. Needs a lane without
	// Tenant.
	FairTenants bool `yaml:"fair_tenants"`
	// IncludeTypes, when not empty, limits the lane to these event types.
	IncludeTypes []string `yaml:"include_types"`
	// ExcludeTypes leaves these event types to other lanes.
	ExcludeTypes []string `yaml:"exclude_types"`
	// Publisher sends the lane's messages. Required. Lanes given the same
	// Publisher share one breaker: an outage of that broker pauses them all.
	Publisher broker.Publisher `yaml:"-"`
	// Broker names the lane's broker connection in logs, health and
	// metrics. Defaults to the lane's name.
	Broker string `yaml:"broker"`
	// Store names the database the lane's table is in, among a config
	// file's stores (package config; empty: the default store). A Relay
	// relays from Config.Store only: `herald run` runs one Relay per store.
	Store string `yaml:"store"`
	// Destination renders each message's subject/topic/routing key. Required.
	Destination broker.Template `yaml:"destination"`
	// MaxPayload, when positive, is the largest payload the lane publishes,
	// in bytes; a larger one goes dead unpublished. The broker's own limit
	// (broker.Limiter) applies too, whichever is smaller. Enqueue applies
	// its limit when rows are written; this one catches rows written by
	// plain SQL.
	MaxPayload int `yaml:"max_payload"`
	// Ordering defaults to OrderingNone.
	Ordering Ordering `yaml:"ordering"`
	// OnDead defaults to OnDeadPark.
	OnDead OnDead `yaml:"on_dead"`
	// OnDelivered defaults to OnDeliveredMark; OnDeliveredDelete only on a
	// log lane (a polling lane deletes delivered rows by retention),
	// OnDeliveredLeave only on a log lane of a mapped table.
	OnDelivered OnDelivered `yaml:"on_delivered"`
	// Concurrency is the number of workers. Defaults to 1.
	Concurrency int `yaml:"concurrency"`
	// BatchSize is the most rows per claim. Defaults to 100.
	BatchSize int `yaml:"batch_size"`
	// PollInterval is the longest wait between claims when idle. Defaults to 1s.
	PollInterval time.Duration `yaml:"poll_interval"`
	// PublishTimeout bounds one publish. Defaults to 3s.
	PublishTimeout time.Duration `yaml:"publish_timeout"`
	// Lease is how long claimed rows stay reserved. Defaults to
	// 3 × PublishTimeout; it must exceed PublishTimeout.
	Lease time.Duration `yaml:"lease"`
	// Retry is the retry policy.
	Retry Retry `yaml:"retry"`
	// DiscardAfter deletes events older than this instead of publishing
	// them (0: never).
	DiscardAfter time.Duration `yaml:"discard_after"`
	// Retention deletes old finished rows.
	Retention Retention `yaml:"retention"`
	// BeforePublish, when set, runs before each message is published.
	BeforePublish BeforePublish `yaml:"-"`
	// Source is where the lane finds its events: SourcePoll (the default)
	// claims rows; SourceLog reads the database's log and needs a store
	// that is a store.LogReader (docs/loglanes.md). Its Concurrency
	// workers then claim only the rows the log reader handed over
	// (retries, delayed events).
	Source Source `yaml:"source"`
	// Columns, Statuses and TimeUnit read an outbox table Herald did not
	// make through its own column names, status values and time unit
	// (store.Mapping, docs/adopt.md). Unset: the table is Herald's own.
	Columns  store.Columns  `yaml:"columns,omitempty"`
	Statuses store.Statuses `yaml:"statuses,omitempty"`
	TimeUnit store.TimeUnit `yaml:"time_unit,omitempty"`
	// Body builds a mapped table's message bodies field by field
	// (store.Mapping.Body); unset, the payload column is the body.
	Body []store.BodyField `yaml:"body,omitempty"`
	// HeaderColumns carries a mapped table's columns as message headers,
	// header name → column (store.Mapping.HeaderColumns).
	HeaderColumns map[string]string `yaml:"header_columns,omitempty"`
}

// WithDefaults returns l with every unset setting at its default.
func (l Lane) WithDefaults() Lane {
	if l.Table == "" {
		l.Table = herald.DefaultTable
	}
	if l.Broker == "" {
		l.Broker = l.Name
	}
	if l.Ordering == "" {
		l.Ordering = OrderingNone
	}
	if l.OnDelivered == "" {
		l.OnDelivered = OnDeliveredMark
	}
	if l.OnDead == "" {
		l.OnDead = OnDeadPark
	}
	if l.Source == "" {
		l.Source = SourcePoll
	}
	if l.Concurrency <= 0 {
		l.Concurrency = 1
	}
	if l.BatchSize <= 0 {
		l.BatchSize = 100
	}
	if l.PollInterval <= 0 {
		l.PollInterval = time.Second
	}
	if l.PublishTimeout <= 0 {
		l.PublishTimeout = 3 * time.Second
	}
	if l.Lease <= 0 {
		l.Lease = 3 * l.PublishTimeout
	}
	if l.Retention.Interval <= 0 {
		l.Retention.Interval = time.Minute
	}
	if l.Retention.BatchSize <= 0 {
		l.Retention.BatchSize = 1000
	}
	l.Retry = l.Retry.WithDefaults()
	l.Statuses = l.Mapping().Statuses // a mapped table's retry status
	return l
}

// Mapping is how the lane reads its table when it is not Herald's own;
// zero when it is.
func (l Lane) Mapping() store.Mapping {
	return store.Mapping{Columns: l.Columns, Statuses: l.Statuses, TimeUnit: l.TimeUnit, Body: l.Body,
		HeaderColumns: l.HeaderColumns}.WithDefaults()
}

// Scope is the rows the lane relays: its table, tenant and type filters.
func (l Lane) Scope() store.Scope {
	return store.Scope{Table: l.Table, Tenant: l.Tenant, IncludeTypes: l.IncludeTypes, ExcludeTypes: l.ExcludeTypes}
}

// TableUse is what the lane's claims read its table by, beyond a plain
// lane's claim index (store.UseIndexer): ordered claims, tenant claims.
func (l Lane) TableUse() store.TableUse {
	return store.TableUse{Ordered: l.Ordering == OrderingKey, Tenants: l.Tenant != "" || l.FairTenants}
}
