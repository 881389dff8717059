package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/relay"
)

// maxBatchSize bounds batch_size: a claim's rows are held in memory and
// published together.
const maxBatchSize = 10000

func (f *File) applyDefaults() {
	if f.Store.Driver == "" {
		f.Store.Driver = "sqlite"
	}
	if f.Store.DSN == "" && f.Store.Driver == "sqlite" {
		f.Store.DSN = "herald.db"
	}
	if f.Store.Migrate == nil {
		yes := true
		f.Store.Migrate = &yes
	}
	if f.Admin.Addr == "" {
		f.Admin.Addr = "127.0.0.1:8080"
	}
	for _, b := range f.Brokers {
		if b != nil {
			b.applyDefaults()
		}
	}
	for i := range f.Lanes {
		l := &f.Lanes[i]
		if l.Table == "" {
			l.Table = herald.DefaultTable
		}
		if l.Broker == "" && len(f.Brokers) == 1 {
			for name := range f.Brokers {
				l.Broker = name
			}
		}
		if l.Retry.Strategy == "" {
			l.Retry.Strategy = "exponential_backoff"
		}
	}
}

func (f *File) validate() error {
	var errs []error
	add := func(key string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	d, err := herald.ParseDialect(f.Store.Driver)
	add("store.driver", err)
	if f.Store.DSN == "" {
		add("store.dsn", errors.New("is required"))
	} else if err == nil {
		add("store.dsn", validateDSN(d, f.Store.DSN))
	}
	switch f.Store.Synchronous {
	case "", "full", "normal":
	default:
		add("store.synchronous", fmt.Errorf("%q is not full or normal", f.Store.Synchronous))
	}
	for _, name := range sortedKeys(f.Brokers) {
		b := f.Brokers[name]
		if b == nil {
			add("brokers."+name, errors.New("is empty"))
			continue
		}
		add("brokers."+name, b.validate())
	}
	if len(f.Lanes) == 0 {
		add("lanes", errors.New("at least one lane is required"))
	}
	seen := map[string]bool{}
	for i := range f.Lanes {
		l := &f.Lanes[i]
		key := fmt.Sprintf("lanes[%d]", i)
		if l.Name != "" {
			key = fmt.Sprintf("lanes[%d] (%s)", i, l.Name)
		}
		for _, err := range l.validate(f.Brokers) {
			errs = append(errs, fmt.Errorf("%s.%w", key, err))
		}
		if seen[l.Name] && l.Name != "" {
			add(key+".name", fmt.Errorf("lane %q is defined twice", l.Name))
		}
		seen[l.Name] = true
	}
	add("admin.addr", adminAddr(f.Admin.Addr))
	add("tracing.otlp_endpoint", otlpEndpoint(f.Tracing.OTLPEndpoint))
	if r := f.Tracing.SampleRatio; r != nil && (*r < 0 || *r > 1) {
		add("tracing.sample_ratio", fmt.Errorf("%v is not between 0 and 1", *r))
	}
	add("tracing.protocol", oneOf(f.Tracing.Protocol, "", "http/protobuf", "grpc"))
	add("log.level", oneOf(f.Log.Level, "", "debug", "info", "warn", "error"))
	add("log.format", oneOf(f.Log.Format, "", "text", "json"))
	return errors.Join(errs...)
}

// validate returns one error per bad key, each starting with the key.
func (l *Lane) validate(brokers map[string]*Broker) []error {
	var errs []error
	add := func(key string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	if l.Name == "" {
		add("name", errors.New("is required"))
	} else {
		add("name", herald.ValidateIdentifier(l.Name))
	}
	add("table", herald.ValidateIdentifier(l.Table))
	if _, ok := brokers[l.Broker]; !ok {
		add("broker", fmt.Errorf("unknown broker %q (configured: %s)", l.Broker, strings.Join(sortedKeys(brokers), ", ")))
	}
	if tpl, err := broker.ParseTemplate(l.Destination); err != nil {
		add("destination", err)
	} else if b := brokers[l.Broker]; b != nil && b.Webhook != nil {
		add("destination", webhookURL(tpl))
	}
	add("ordering", oneOf(l.Ordering, "", "none", "key"))
	add("on_dead", oneOf(l.OnDead, "", "park", "skip"))
	add("source", relay.Source(l.Source).Validate())
	add("retry.strategy", oneOf(l.Retry.Strategy, "exponential_backoff"))
	add("retry.jitter", oneOf(l.Retry.Jitter, "", "full", "equal", "none"))
	if l.Retry.Max > 0 && l.Retry.Max < l.Retry.Initial {
		add("retry.max", fmt.Errorf("%s is less than retry.initial %s", l.Retry.Max.D(), l.Retry.Initial.D()))
	}
	add("concurrency", inRange(l.Concurrency, 0, 1024))
	add("batch_size", inRange(l.BatchSize, 0, maxBatchSize))
	add("retry.max_attempts", inRange(l.Retry.MaxAttempts, 0, 1_000_000))
	add("retention.batch_size", inRange(l.Retention.BatchSize, 0, 1_000_000))
	add("max_payload", inRange(l.MaxPayload, 0, 1<<30))
	if l.Lease > 0 && l.PublishTimeout > 0 && l.Lease <= l.PublishTimeout {
		add("lease", fmt.Errorf("%s must be longer than publish_timeout %s", l.Lease.D(), l.PublishTimeout.D()))
	}
	if l.Tenant != "" && len(l.Tenant) > 64 {
		add("tenant", errors.New("is longer than 64 bytes"))
	}
	return errs
}

func oneOf(v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	var named []string
	for _, a := range allowed {
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// webhookURL checks that a webhook lane's destination renders to an
// absolute http(s) URL (placeholders filled with a sample value).
func webhookURL(tpl broker.Template) error {
	sample := herald.Event{Topic: "topic", Type: "Type", Tenant: "tenant", PartitionKey: "key"}
	u, err := url.Parse(tpl.Render(sample))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("a webhook destination must be an absolute http(s) URL such as \"https://partner.example/hooks/{event_type}\"")
	}
	return nil
}

// AdminOff is the admin.addr that disables the admin endpoint.
const AdminOff = "off"

// adminAddr checks admin.addr: host:port (port 0 picks a free one) or off.
func adminAddr(addr string) error {
	if addr == AdminOff {
		return nil
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return fmt.Errorf("%q is not host:port or %s", addr, AdminOff)
	}
	return nil
}

// otlpEndpoint checks tracing.otlp_endpoint: empty, or an http(s) URL.
func otlpEndpoint(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL such as http://127.0.0.1:4318", s)
	}
	return nil
}
