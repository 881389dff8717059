package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"

	"github.com/heraldhq/herald"
)

func (f *File) applyDefaults() {
	f.applyStoreDefaults()
	if f.Admin.Addr == "" {
		f.Admin.Addr = "127.0.0.1:8080"
	}
	for i := range f.Lanes {
		l := &f.Lanes[i]
		if l.Broker == "" && len(f.Brokers) == 1 {
			for name := range f.Brokers {
				l.Broker = name
			}
		}
	}
}

func (f *File) validate(d Drivers) error {
	var errs []error
	add := func(key string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	errs = append(errs, f.validateStores(d)...)
	for _, name := range sortedKeys(f.Brokers) {
		b := f.Brokers[name]
		if b == nil {
			add("brokers."+name, errors.New("is empty"))
			continue
		}
		add("brokers."+name, b.Config.Validate())
	}
	if len(f.Lanes) == 0 && len(f.Projections) == 0 {
		add("lanes", errors.New("at least one lane (or projection) is required"))
	}
	seen := map[string]bool{}
	for i := range f.Lanes {
		l := &f.Lanes[i]
		key := fmt.Sprintf("lanes[%d]", i)
		if l.Name != "" {
			key = fmt.Sprintf("lanes[%d] (%s)", i, l.Name)
		}
		for _, err := range validateLane(l, f.Brokers) {
			errs = append(errs, fmt.Errorf("%s.%w", key, err))
		}
		if err := f.checkStoreName(key+".store", l.Store); err != nil {
			errs = append(errs, err)
		}
		if seen[l.Name] && l.Name != "" {
			add(key+".name", fmt.Errorf("lane %q is defined twice", l.Name))
		}
		seen[l.Name] = true
	}
	errs = append(errs, f.validateMappings()...)
	errs = append(errs, f.validateProjections()...)
	add("admin.addr", adminAddr(f.Admin.Addr))
	add("tracing.otlp_endpoint", otlpEndpoint(f.Tracing.OTLPEndpoint))
	if r := f.Tracing.SampleRatio; r != nil && (*r < 0 || *r > 1) {
		add("tracing.sample_ratio", fmt.Errorf("%v is not between 0 and 1", *r))
	}
	add("tracing.protocol", oneOf(f.Tracing.Protocol, "", ProtocolHTTP, ProtocolGRPC))
	if err := f.Tracing.validateEnv(); err != nil {
		errs = append(errs, err)
	}
	add("log.level", oneOf(f.Log.Level, "", "debug", "info", "warn", "error"))
	add("log.format", oneOf(f.Log.Format, "", "text", "json"))
	return errors.Join(errs...)
}

// validateLane returns one error per bad key, each starting with the key:
// the lane's settings by lane.Lane.Validate, and here what only a config
// file has (names, the broker a lane names, its destination as that
// broker sees it).
func validateLane(l *Lane, brokers map[string]*Broker) []error {
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
	if _, ok := brokers[l.Broker]; !ok {
		add("broker", fmt.Errorf("unknown broker %q (configured: %s)", l.Broker, strings.Join(sortedKeys(brokers), ", ")))
	}
	if l.Destination.String() == "" {
		add("destination", errors.New("destination template is empty"))
	} else if b := brokers[l.Broker]; b != nil {
		add("destination", b.checkDestination(l.Destination))
	}
	if err := l.Validate(); err != nil {
		errs = append(errs, unwrapJoin(err)...)
	}
	return errs
}

// unwrapJoin returns the errors errors.Join joined into err.
func unwrapJoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
