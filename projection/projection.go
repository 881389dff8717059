// Package projection declares the `projections:` entries of a config
// file: their YAML keys, their rules (Validate) and the named parameters
// of their SQL statements (Compile). It is a leaf (the root package only),
// so that package config reads them without linking the projector;
// package sqlproj runs them.
//
// A statement names event values as :event.id, :event.type,
// :event.tenant, :event.key (the partition key), :event.topic,
// :event.time_ms (Unix milliseconds), :header.NAME and :payload.PATH (a
// dotted path into the JSON payload; array elements by index). A payload
// number is passed as an int64 when integral, else a float64; an object
// or array as its JSON text.
//
// EventFrom (`event_from`) takes those event values from the message body
// by JSONPath, or from named headers, for messages another producer wrote.
package projection

import (
	"fmt"
	"time"

	"github.com/heraldhq/herald"
)

// Projection is one entry of `projections`.
type Projection struct {
	// Name is the projection's name in the ledger. Required.
	Name string `yaml:"name"`
	// Store names the config file's store whose database holds the ledger
	// and the read model (and the outbox of an outbox source); empty: the
	// default store.
	Store string `yaml:"store"`
	// Source is where the events come from. Required.
	Source Source `yaml:"source"`
	// IncludeTypes / ExcludeTypes filter event types (projector.Config).
	IncludeTypes []string `yaml:"include_types"`
	ExcludeTypes []string `yaml:"exclude_types"`
	// Table is the ledger table. Defaults to herald_projection_events.
	Table string `yaml:"table"`
	// Statements run in order, in the ledger's transaction. At least one.
	Statements []string `yaml:"statements"`
	// Workers, MaxAttempts: as projector.Config (defaults 4 and 10).
	Workers     int `yaml:"workers"`
	MaxAttempts int `yaml:"max_attempts"`
	// Retry spaces retries of a failing event. Defaults to 1s, max 1m.
	Retry Retry `yaml:"retry"`
	// EventFrom takes the event's id, type, tenant, key and time from the
	// body or named headers instead of Herald's headers (messages another
	// producer published). Optional.
	EventFrom EventFrom `yaml:"event_from"`
}

// Retry is a projection's `retry` section.
type Retry struct {
	Initial time.Duration `yaml:"initial"`
	Max     time.Duration `yaml:"max"`
}

// Source is a projection's `source`: a broker subscription or an outbox
// table of the store's database.
type Source struct {
	// Broker names a `brokers` entry; Destination is what to read there
	// (the topic, stream, queue or subject the lane publishes to), and
	// Group the consumer group or durable name (defaults to the
	// projection's name).
	Broker      string `yaml:"broker"`
	Destination string `yaml:"destination"`
	Group       string `yaml:"group"`
	// Outbox names an outbox table instead of a broker.
	Outbox string `yaml:"outbox"`
}

// Validate checks p without a database; path is its key path
// ("projections[0]") for the errors.
func (p Projection) Validate(path string) error {
	switch {
	case p.Name == "":
		return fmt.Errorf("%s.name: required", path)
	case (p.Source.Broker == "") == (p.Source.Outbox == ""):
		return fmt.Errorf("%s.source: name a broker or an outbox table (one of them)", path)
	case p.Source.Broker != "" && p.Source.Destination == "":
		return fmt.Errorf("%s.source.destination: required with a broker", path)
	case len(p.Statements) == 0:
		return fmt.Errorf("%s.statements: at least one SQL statement is required", path)
	case p.Workers < 0 || p.MaxAttempts < 0 || p.Retry.Initial < 0 || p.Retry.Max < 0:
		return fmt.Errorf("%s: workers, max_attempts and retry must not be negative", path)
	}
	if p.Source.Outbox != "" {
		if err := herald.ValidateIdentifier(p.Source.Outbox); err != nil {
			return fmt.Errorf("%s.source.outbox: %v", path, err)
		}
	}
	for i, s := range p.Statements {
		if _, err := Compile(s, anyDialect); err != nil {
			return fmt.Errorf("%s.statements[%d]: %v", path, i, err)
		}
	}
	if err := p.EventFrom.Validate(path + ".event_from"); err != nil {
		return err
	}
	return p.validateNames(path)
}

// anyDialect compiles statements for validation, before the store is known:
// the parameters' names are checked the same way in every dialect.
var anyDialect = herald.Dialect{Placeholder: func(int) string { return "?" }}

// validateNames checks the name, the ledger table and the type filters as
// the projector will.
func (p Projection) validateNames(path string) error {
	if len(p.Name) > 64 {
		return fmt.Errorf("%s.name: %q is longer than 64 bytes", path, p.Name)
	}
	if p.Table != "" {
		if err := herald.ValidateIdentifier(p.Table); err != nil {
			return fmt.Errorf("%s.table: %v", path, err)
		}
	}
	for key, types := range map[string][]string{"include_types": p.IncludeTypes, "exclude_types": p.ExcludeTypes} {
		for i, t := range types {
			if t == "" {
				return fmt.Errorf("%s.%s[%d]: empty event type", path, key, i)
			}
		}
	}
	return nil
}
