package relay

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

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
		if err := validateLane(l); err != nil {
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

// validateLane checks what a relay needs of a lane beyond its settings
// (Lane.Validate): a name, a publisher, a destination.
func validateLane(l Lane) error {
	switch {
	case l.Name == "":
		return errors.New("relay: a lane has no name")
	case l.Publisher == nil:
		return fmt.Errorf("relay: lane %q: no publisher", l.Name)
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("relay: lane %q: %w", l.Name, err)
	}
	if len(l.Destination.Render(herald.Event{})) == 0 && !l.Destination.HasPlaceholders() {
		return fmt.Errorf("relay: lane %q: no destination", l.Name)
	}
	return nil
}
