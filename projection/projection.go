// Package projection declares a projector's settings (Settings, which
// projector.Config embeds) and the `projections:` entries of a config file
// that embed them: their YAML keys, defaults and rules (Validate) and the
// named parameters of their SQL statements (Compile). It is a leaf (the
// root package, the seams and backoff), so that package config reads them
// without linking the projector; package sqlproj runs them.
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
	"errors"
	"fmt"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/backoff"
)

// Projection is one entry of `projections`: the projector's Settings
// (name, table, type filters, workers, max_attempts, retry), inline, and
// what only a config file's projection has.
type Projection struct {
	Settings `yaml:",inline"`
	// Store names the config file's store whose database holds the ledger
	// and the read model (and the outbox of an outbox source); empty: the
	// default store.
	Store string `yaml:"store"`
	// Source is where the events come from. Required.
	Source Source `yaml:"source"`
	// Statements run in order, in the ledger's transaction. At least one.
	Statements []string `yaml:"statements"`
}

// Retry is a projection's `retry` section: the projector's backoff
// (Settings.Backoff).
type Retry = backoff.Policy

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

// Validate checks p without a database and returns one error per bad
// key, each starting with its key path under path ("projections[0]"),
// joined; nil when all are good.
func (p Projection) Validate(path string) error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: "+format, append([]any{path, key}, args...)...))
	}
	if err := p.Settings.Validate(); err != nil {
		for _, e := range unjoin(err) {
			errs = append(errs, fmt.Errorf("%s.%w", path, e))
		}
	}
	switch {
	case (p.Source.Broker == "") == (p.Source.Outbox == ""):
		add("source", "name a broker or an outbox table (one of them)")
	case p.Source.Broker != "" && p.Source.Destination == "":
		add("source.destination", "required with a broker")
	case p.Source.Outbox != "":
		if err := herald.ValidateIdentifier(p.Source.Outbox); err != nil {
			add("source.outbox", "%v", err)
		}
	}
	if len(p.Statements) == 0 {
		add("statements", "at least one SQL statement is required")
	}
	for i, s := range p.Statements {
		if _, err := Compile(s, anyDialect); err != nil {
			add(fmt.Sprintf("statements[%d]", i), "%v", err)
		}
	}
	return errors.Join(errs...)
}

// unjoin returns the errors errors.Join joined into err.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// anyDialect compiles statements for validation, before the store is known:
// the parameters' names are checked the same way in every dialect.
var anyDialect = herald.Dialect{Placeholder: func(int) string { return "?" }}
