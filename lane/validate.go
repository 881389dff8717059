package lane

import (
	"errors"
	"fmt"
	"strings"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// MaxBatchSize bounds Lane.BatchSize: a claim's rows are held in memory and
// published together.
const MaxBatchSize = 10000

// maxTenant is the longest tenant the outbox tables hold.
const maxTenant = 64

// Validate checks the lane's settings as given (zero means the default) and
// returns one error per bad setting, each starting with its YAML key
// ("batch_size: -1 is out of range [0, 10000]"), joined; nil when all are
// good. The lane's name, publisher and destination are checked by New; a
// config file's lanes by package config, which prefixes the key path
// (lanes[0].batch_size).
func (l Lane) Validate() error {
	var errs []error
	add := func(key string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	d := l.WithDefaults()
	add("table", herald.ValidateIdentifier(d.Table))
	add("ordering", oneOf(string(l.Ordering), "", string(OrderingNone), string(OrderingKey)))
	add("on_dead", oneOf(string(l.OnDead), "", string(OnDeadPark), string(OnDeadSkip)))
	add("source", l.Source.Validate())
	add("on_delivered", oneOf(string(l.OnDelivered), "", string(OnDeliveredMark), string(OnDeliveredDelete), string(OnDeliveredLeave)))
	if l.OnDelivered == OnDeliveredLeave && l.Mapping().IsZero() {
		add("on_delivered", errLeaveUnmapped)
	}
	if l.OnDelivered == OnDeliveredDelete && l.Source != SourceLog {
		add("on_delivered", errors.New("delete needs source: log; a polling lane deletes delivered rows with retention.delivered"))
	}
	add("retry.strategy", oneOf(l.Retry.Strategy, "", StrategyExponential))
	add("retry.jitter", oneOf(string(l.Retry.Jitter), "", string(JitterFull), string(JitterEqual), string(JitterNone)))
	if l.Retry.Max > 0 && l.Retry.Max < l.Retry.Initial {
		add("retry.max", fmt.Errorf("%s is less than retry.initial %s", l.Retry.Max, l.Retry.Initial))
	}
	add("concurrency", inRange(l.Concurrency, 0, 1024))
	add("batch_size", inRange(l.BatchSize, 0, MaxBatchSize))
	add("retry.max_attempts", inRange(l.Retry.MaxAttempts, 0, 1_000_000))
	add("retention.batch_size", inRange(l.Retention.BatchSize, 0, 1_000_000))
	add("max_payload", inRange(l.MaxPayload, 0, 1<<30))
	if d.Lease <= d.PublishTimeout {
		add("lease", fmt.Errorf("%s must be longer than publish_timeout %s", d.Lease, d.PublishTimeout))
	}
	if len(l.Tenant) > maxTenant {
		add("tenant", fmt.Errorf("is longer than %d bytes", maxTenant))
	}
	if l.FairTenants && l.Tenant != "" {
		add("fair_tenants", fmt.Errorf("shares batches between tenants, but the lane is limited to tenant %q", l.Tenant))
	}
	if m := l.Mapping(); !m.IsZero() {
		errs = append(errs, l.validateMapped(m)...)
	}
	return errors.Join(errs...)
}

// validateMapped checks a lane on a mapped table: the mapping itself, and
// the lane settings that need columns the mapping lacks or that a mapped
// table cannot serve yet (docs/adopt.md).
func (l Lane) validateMapped(m store.Mapping) []error {
	var errs []error
	if err := m.Validate(); err != nil {
		errs = append(errs, unjoin(err)...)
	}
	refuse := func(key, why string) { errs = append(errs, fmt.Errorf("%s: %s", key, why)) }
	if l.Ordering == OrderingKey {
		switch {
		case m.Columns.Key == "" || m.Columns.CreatedAt == "":
			refuse("ordering", "key needs columns.key and columns.created_at on a mapped table (a key's order is its rows' created_at, then event id)")
		case l.Source == SourceLog:
			refuse("ordering", "key is not supported on a mapped log lane (source: log) yet")
		}
	}
	errs = append(errs, l.validateMappedLog(m)...)
	if l.FairTenants && m.Columns.Tenant == "" {
		refuse("fair_tenants", "needs columns.tenant on a mapped table")
	}
	if l.Retention.Active > 0 && m.Columns.CreatedAt == "" {
		refuse("retention.active", "needs columns.created_at on a mapped table")
	}
	if l.Tenant != "" && m.Columns.Tenant == "" {
		refuse("tenant", "needs columns.tenant on a mapped table")
	}
	for _, h := range l.Destination.HeaderNames() {
		if _, ok := m.HeaderColumns[h]; !ok && m.Columns.Headers == "" {
			refuse("destination", fmt.Sprintf("{header.%s} is no header_columns entry, and the table has no columns.headers: every row would go dead", h))
		}
	}
	if l.DiscardAfter > 0 && m.Columns.CreatedAt == "" {
		refuse("discard_after", "needs columns.created_at on a mapped table")
	}
	return errs
}

// unjoin returns the errors errors.Join joined into err.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// oneOf refuses v unless it is one of allowed ("" standing for the default).
func oneOf(v string, allowed ...string) error {
	var named []string
	for _, a := range allowed {
		if v == a {
			return nil
		}
		if a != "" {
			named = append(named, a)
		}
	}
	return fmt.Errorf("%q is not one of %s", v, strings.Join(named, ", "))
}

func inRange(v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("%d is out of range [%d, %d]", v, lo, hi)
	}
	return nil
}
