package broker

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/heraldhq/herald"
)

// Driver describes one broker type to a config loader (package config):
// the name its entries carry in `type`, and the config an entry decodes
// into. Each broker package exports one (kafka.Driver, …); the program
// lists the drivers it ships and hands them to the loader, so that the
// loader imports no broker package.
type Driver interface {
	// Type is the value of `type` in a broker entry: "kafka".
	Type() string
	// NewConfig returns a pointer to a new, empty config for one entry.
	// The loader checks the entry's keys against its yaml tags (plus
	// `type`), decodes the entry into it, then validates it.
	NewConfig() DriverConfig
}

// DriverConfig is one broker entry, decoded from YAML.
type DriverConfig interface {
	// Validate checks the entry with its defaults applied; its error
	// starts with the key at fault ("stream: is required"), and the loader
	// prefixes the entry's path (brokers.events.).
	Validate() error
	// Open connects the publisher the entry describes.
	Open(ctx context.Context, env OpenEnv) (Opened, error)
}

// ConfigError is an error of DriverConfig.Open caused by the entry's
// settings, or by what they leave to the environment (a region, the
// credentials), not by the broker's state: `herald run` exits 2 on it, as
// on an invalid file, naming Key under the entry's path.
type ConfigError struct {
	// Key is the entry's key to set or fix: "region", "access_key_id".
	Key string
	Err error
}

func (e *ConfigError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// OpenEnv is what the loader passes to DriverConfig.Open.
type OpenEnv struct {
	// Name is the entry's key under `brokers`.
	Name string
	// Logger logs for the publisher; never nil.
	Logger *slog.Logger
}

// Opened is a publisher a DriverConfig opened, and what to say about it.
type Opened struct {
	Publisher Publisher
	// Close releases the publisher and whatever Open started with it (an
	// embedded server); nil means Publisher.Close.
	Close func() error
	// Endpoint says where the broker is reached, for `herald run` to
	// print: "Kafka at 127.0.0.1:9092". It holds no secret.
	Endpoint string
	// ClientURL, when set, is the URL a consumer in the same process
	// connects to (an embedded NATS server's, chosen at start). It may hold
	// credentials: do not log it.
	ClientURL string
}

// The interfaces below are optional: a DriverConfig implements those that
// apply to its broker, and the loader falls back as each one says.

// Defaulter fills unset keys in place before validation, so that `herald
// config print` shows them. Without it the printed entry shows only what
// the file set (the publisher applies its defaults when it opens).
type Defaulter interface {
	ApplyDefaults()
}

// Redactor returns a copy of the entry without its secrets (passwords,
// signing keys, credentials in URLs), for `herald config print`. An entry
// that holds no secret need not implement it; it is printed as it is.
type Redactor interface {
	Redacted() DriverConfig
}

// PayloadLimiter reports the largest payload the broker accepts, as its
// config (or its server) says, so that an event the broker would refuse is
// refused at enqueue. Without it no limit is known and Herald's default
// applies.
type PayloadLimiter interface {
	PayloadLimit() int
}

// DestinationChecker checks a lane's destination template against the
// broker (a webhook's must render to an http(s) URL). Without it any
// template that parses is accepted.
type DestinationChecker interface {
	CheckDestination(tpl Template) error
}

// Tailer watches what the broker receives, for `herald tail`, changing
// nothing for the broker's consumers. Without it `herald tail` refuses the
// broker's lanes.
type Tailer interface {
	Tail(ctx context.Context, req TailRequest) error
}

// TailRequest is what `herald tail` asks a Tailer for.
type TailRequest struct {
	// Template is the lane's destination template.
	Template Template
	// Destination, when not empty, replaces what the template covers (a
	// subject or routing-key pattern, a stream or a topic).
	Destination string
	// Watching is told what the Tailer watches, before it starts.
	Watching func(what string)
	// Fn is called with each message's destination and event.
	Fn func(dest string, ev herald.Event)
}

// Ready returns a function that tells Watching what, for the Tail
// functions of the broker packages that take a ready callback.
func (r TailRequest) Ready(what string) func() {
	return func() { r.Watching(what) }
}

// PatternOr is the destination to watch: Destination if set, else the
// template with its placeholders as "*", or fallback when a placeholder
// shares a token with other text.
func (r TailRequest) PatternOr(fallback string) string {
	if r.Destination != "" {
		return r.Destination
	}
	if p, ok := r.Template.Pattern("*"); ok {
		return p
	}
	return fallback
}

// ErrTailDestination is returned (wrapped) by Concrete when the lane's
// destination depends on each event and none was named: the user must
// name one, so the CLI treats it as bad input.
var ErrTailDestination = errors.New("the lane's destination depends on each event")

// Concrete is the one stream or topic (what) to watch, for brokers that
// cannot subscribe by pattern.
func (r TailRequest) Concrete(what string) (string, error) {
	if r.Destination != "" {
		return r.Destination, nil
	}
	if r.Template.HasPlaceholders() {
		return "", fmt.Errorf("%w; name the %s with --destination", ErrTailDestination, what)
	}
	return r.Template.Render(herald.Event{}), nil
}

// SubscriberOpener opens a subscriber on the broker an entry describes,
// for a projection declared in the config file. Without it the broker
// cannot feed a configured projection (the loader says so).
type SubscriberOpener interface {
	OpenSubscriber(ctx context.Context, req SubscribeRequest) (Subscriber, error)
}

// SubscribeRequest is what a configured projection asks a
// SubscriberOpener for.
type SubscribeRequest struct {
	// Group is the consumer group (durable, consumer name) every process
	// of the projection shares.
	Group string
	// Destination is the subject, topic or stream to consume.
	Destination string
	// IncludeTypes are the event types the projection takes (all if
	// empty); a broker that can filter by type may use them.
	IncludeTypes []string
	// ClientURL is the URL Open reported in Opened.ClientURL (an embedded
	// server's), if any.
	ClientURL string
	// Logger is the process's, for what a subscriber reports beside its
	// errors (nil: slog.Default()).
	Logger *slog.Logger
	// DB and Dialect are the projection's database, for subscribers that
	// keep their positions there (Kinesis's shard checkpoints).
	DB      *sql.DB
	Dialect herald.Dialect
}

// LogRouter is an optional Driver whose client library logs through a
// logger of its own (RocketMQ's rlog): the program hands it its logger once
// at start, so that the library's lines follow the program's format and
// level. The library's logger is process-wide, so the last call wins.
type LogRouter interface {
	RouteLogs(l *slog.Logger)
}
