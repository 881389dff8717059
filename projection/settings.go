package projection

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/backoff"
	"github.com/heraldhq/herald/store"
)

// MaxName bounds Settings.Name: the ledger's column holds 64 bytes.
const MaxName = 64

// Settings are a projector's settings, declared here once: with the YAML
// keys a `projections` entry gives them, their defaults (WithDefaults) and
// their rules (Validate). projector.Config embeds them (projector.Settings
// is this type), and so does Projection. The settings tagged yaml:"-" are
// set from Go only; a config file's projection keeps their defaults.
type Settings struct {
	// Name is the projection's name, the first part of its dedupe key.
	// Required; at most 64 bytes.
	Name string `yaml:"name"`
	// Table is the projection (ledger) table. Defaults to
	// store.DefaultProjectionTable.
	Table string `yaml:"table"`
	// IncludeTypes, when not empty, limits the projection to these event
	// types; ExcludeTypes leaves these out (applied after IncludeTypes).
	// Any other event is acked as it comes, without a handler call or a
	// projection row: a shared topic's foreign events leave no trace. An
	// OutboxSource should get the same filters in its Scope, or its scans
	// keep meeting the foreign rows.
	IncludeTypes []string `yaml:"include_types"`
	ExcludeTypes []string `yaml:"exclude_types"`
	// Workers is the number of events applied at once. Events of one
	// partition key always go to the same worker, in the order received;
	// events without one go by the read-model row their first statement
	// writes when the statements are known (YAML projections), else by
	// event id. Defaults to 4.
	Workers int `yaml:"workers"`
	// MaxAttempts moves an event to dead after this many failures.
	// Defaults to 10.
	MaxAttempts int `yaml:"max_attempts"`
	// Backoff spaces retries of a failing event: exponential from Initial
	// (default 1s), capped at Max (default 1m, raised to Initial when
	// less), with equal jitter unless Jitter says otherwise.
	Backoff backoff.Policy `yaml:"retry"`
	// EventFrom takes the event's id, type, tenant, key and time from the
	// message body (a JSONPath) or named headers instead of Herald's
	// CloudEvents attributes, so that messages another producer published
	// (an existing service's own outbox worker) and Herald's share one
	// ledger. A message whose configured attribute is missing goes dead at
	// once with the reason naming it. Defaults to none: Herald's headers.
	EventFrom EventFrom `yaml:"event_from"`
	// BatchSize is the most messages taken from the source at once.
	// Defaults to 64.
	BatchSize int `yaml:"-"`
	// ApplyBatch is the most events of one worker applied in one
	// transaction (each under a savepoint): one commit, so one fsync, for
	// all of them. 1 applies one event per transaction. Defaults to 32.
	ApplyBatch int `yaml:"-"`
	// Lease bounds a claim: a processing row older than this may be taken
	// over. Defaults to 1m.
	Lease time.Duration `yaml:"-"`
	// SweepInterval is how often failed events kept in the table (replayed
	// dead events, failures of a crashed worker) are retried. Defaults to 5s.
	SweepInterval time.Duration `yaml:"-"`
	// DoneRetention deletes done rows older than this: the dedupe horizon.
	// A redelivery older than the horizon would be applied again (see
	// docs/projector.md). Zero, the default, keeps them forever.
	DoneRetention time.Duration `yaml:"-"`
}

// WithDefaults returns s with every unset setting at its default.
func (s Settings) WithDefaults() Settings {
	if s.Table == "" {
		s.Table = store.DefaultProjectionTable
	}
	if s.Workers <= 0 {
		s.Workers = 4
	}
	if s.MaxAttempts <= 0 {
		s.MaxAttempts = 10
	}
	if s.Backoff.Initial <= 0 {
		s.Backoff.Initial = time.Second
	}
	if s.Backoff.Max <= 0 {
		s.Backoff.Max = time.Minute
	}
	s.Backoff.Max = max(s.Backoff.Max, s.Backoff.Initial)
	if s.Backoff.Jitter == "" {
		s.Backoff.Jitter = backoff.JitterEqual
	}
	if s.BatchSize <= 0 {
		s.BatchSize = 64
	}
	if s.ApplyBatch <= 0 {
		s.ApplyBatch = 32
	}
	if s.Lease <= 0 {
		s.Lease = time.Minute
	}
	if s.SweepInterval <= 0 {
		s.SweepInterval = 5 * time.Second
	}
	return s
}

// Wants reports whether the projection applies events of type t.
func (s Settings) Wants(t string) bool {
	if len(s.IncludeTypes) > 0 && !slices.Contains(s.IncludeTypes, t) {
		return false
	}
	return !slices.Contains(s.ExcludeTypes, t)
}

// Validate checks the settings as given (zero means the default) and
// returns one error per bad setting, each starting with its key
// ("workers: -1 is negative"), joined; nil when all are good. A config
// file's entries are checked by Projection.Validate, which prefixes their
// key path (projections[0].workers).
func (s Settings) Validate() error {
	var errs []error
	add := func(key string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	switch {
	case s.Name == "":
		add("name", errors.New("is required"))
	case len(s.Name) > MaxName:
		add("name", fmt.Errorf("%q is longer than %d bytes", s.Name, MaxName))
	}
	if s.Table != "" {
		add("table", herald.ValidateIdentifier(s.Table))
	}
	for key, types := range map[string][]string{"include_types": s.IncludeTypes, "exclude_types": s.ExcludeTypes} {
		if i := slices.Index(types, ""); i >= 0 {
			add(fmt.Sprintf("%s[%d]", key, i), errors.New("empty event type"))
		}
	}
	add("workers", notNegative(s.Workers))
	add("max_attempts", notNegative(s.MaxAttempts))
	add("retry.initial", notNegative(s.Backoff.Initial))
	add("retry.max", notNegative(s.Backoff.Max))
	add("retry.jitter", jitter(s.Backoff.Jitter))
	add("batch_size", notNegative(s.BatchSize))
	add("apply_batch", notNegative(s.ApplyBatch))
	add("lease", notNegative(s.Lease))
	add("sweep_interval", notNegative(s.SweepInterval))
	add("done_retention", notNegative(s.DoneRetention))
	if _, err := s.EventFrom.Compile("event_from"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func notNegative[T int | time.Duration](v T) error {
	if v < 0 {
		return fmt.Errorf("%v is negative", v)
	}
	return nil
}

// jitter refuses a jitter mode backoff.Policy does not know ("" is the
// default).
func jitter(j backoff.Jitter) error {
	modes := []backoff.Jitter{backoff.JitterFull, backoff.JitterEqual, backoff.JitterNone}
	if j == "" || slices.Contains(modes, j) {
		return nil
	}
	named := make([]string, len(modes))
	for i, m := range modes {
		named[i] = string(m)
	}
	return fmt.Errorf("%q is not one of %s", j, strings.Join(named, ", "))
}
