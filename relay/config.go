package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

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

func (r Retention) enabled() bool { return r.Delivered > 0 || r.Dead > 0 || r.Active > 0 }

// BeforePublish runs before a message is published. An error keeps the event
// retryable (or dead, if permanent) and it is not published this time.
type BeforePublish func(ctx context.Context, m broker.Message) error

// Lane is one outbox table (or a filtered part of one) relayed to one broker.
// Its settings are declared here once, with the YAML keys a config file
// gives them (package config decodes `lanes` entries into Lane), their
// defaults (WithDefaults) and their rules (Validate).
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
	// log lane (a polling lane deletes delivered rows by retention).
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
}

// Config configures a Relay.
type Config struct {
	// Store is the database holding every lane's table. Required.
	Store store.Store
	// Lanes to relay. At least one.
	Lanes []Lane
	// Node names this process in worker ids. Defaults to host-pid.
	Node string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Observer, when set, is told about every batch (metrics, tests).
	Observer Observer
	// TracerProvider makes the publish spans (see tracing.go). Defaults to
	// OpenTelemetry's global provider, which does nothing until the
	// application installs one.
	TracerProvider trace.TracerProvider
	// Health, when set, is where the relay keeps its brokers' and
	// database's state, for a readiness check or metrics to read.
	Health *Health
	// ProbeInitial and ProbeMax bound the wait between probes of an
	// unreachable broker: ProbeInitial after the outage begins, doubling
	// per failed probe up to ProbeMax. Default 250ms and 10s.
	ProbeInitial, ProbeMax time.Duration
}

func (c Config) withDefaults() Config {
	if c.Node == "" {
		host, _ := os.Hostname()
		c.Node = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.TracerProvider == nil {
		c.TracerProvider = otel.GetTracerProvider()
	}
	if c.Health == nil {
		c.Health = NewHealth()
	}
	if c.ProbeInitial <= 0 {
		c.ProbeInitial = defaultProbeInitial
	}
	if c.ProbeMax <= 0 {
		c.ProbeMax = defaultProbeMax
	}
	c.ProbeMax = max(c.ProbeMax, c.ProbeInitial)
	lanes := make([]Lane, len(c.Lanes))
	for i, l := range c.Lanes {
		lanes[i] = l.WithDefaults()
	}
	c.Lanes = lanes
	return c
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
	l.Retry = l.Retry.withDefaults()
	l.Statuses = l.Mapping().Statuses // a mapped table's retry status
	return l
}

func (c Config) validate() error {
	if c.Store == nil {
		return errors.New("relay: Store is required")
	}
	if len(c.Lanes) == 0 {
		return errors.New("relay: no lanes configured")
	}
	seen := map[string]bool{}
	mappings := map[string]string{} // by table: the first lane's mapping
	for _, l := range c.Lanes {
		if err := l.validate(); err != nil {
			return err
		}
		m := fmt.Sprint(l.Mapping())
		if first, ok := mappings[l.Table]; ok && first != m {
			return fmt.Errorf("relay: lane %q reads table %s through another mapping than an earlier lane: a store reads a table one way", l.Name, l.Table)
		}
		mappings[l.Table] = m
		if _, ok := c.Store.(store.LogReader); l.Source == SourceLog && !ok {
			return fmt.Errorf("relay: lane %q: source log needs a database whose log Herald reads (PostgreSQL; MySQL/MariaDB through store/mysql/binlog); this store has none", l.Name)
		}
		if err := store.MapTable(c.Store, l.Table, l.Mapping()); err != nil {
			return fmt.Errorf("relay: lane %q: %w", l.Name, err)
		}
		if seen[l.Name] {
			return fmt.Errorf("relay: lane %q is configured twice", l.Name)
		}
		seen[l.Name] = true
	}
	return nil
}

func (l Lane) validate() error {
	switch {
	case l.Name == "":
		return errors.New("relay: a lane has no name")
	case l.Publisher == nil:
		return fmt.Errorf("relay: lane %q: no publisher", l.Name)
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("relay: lane %q: %w", l.Name, err)
	}
	if l.FairTenants && l.Tenant != "" {
		return fmt.Errorf("relay: lane %q: fair_tenants shares batches between tenants, but the lane is limited to tenant %q", l.Name, l.Tenant)
	}
	if len(l.Destination.Render(herald.Event{})) == 0 && !l.Destination.HasPlaceholders() {
		return fmt.Errorf("relay: lane %q: no destination", l.Name)
	}
	return nil
}

// Mapping is how the lane reads its table when it is not Herald's own;
// zero when it is.
func (l Lane) Mapping() store.Mapping {
	return store.Mapping{Columns: l.Columns, Statuses: l.Statuses, TimeUnit: l.TimeUnit, Body: l.Body}.WithDefaults()
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
