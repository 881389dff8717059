package config

import (
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// Print returns the effective config (file over defaults, environment
// applied, every default filled in) as YAML, with every password, secret
// and credential in a URL or DSN replaced by xxxxx (each broker's through
// broker.Redactor), for `herald config print`. A value that only the
// running process or an OTEL_* variable decides carries a comment saying
// so.
func (f *File) Print() ([]byte, error) {
	c := f.redacted()
	c.Tracing, c.Log = f.Tracing.WithDefaults(), f.Log.WithDefaults()
	var n yaml.Node
	if err := n.Encode(&c); err != nil {
		return nil, err
	}
	if f.noDefaultStore {
		// Without a default store the file has no `store` section to print.
		if i := mappingIndex(&n, "store"); i >= 0 {
			n.Content = append(n.Content[:i], n.Content[i+2:]...)
		}
	}
	f.annotate(&n)
	return yaml.Marshal(&n)
}

// redacted returns a copy of f with its secrets hidden.
func (f *File) redacted() File {
	c := *f
	c.Store.DSN = Redact(c.Store.DSN)
	if len(f.Stores) > 0 {
		c.Stores = make(map[string]*Store, len(f.Stores))
		for name, s := range f.Stores {
			if s != nil {
				r := *s
				r.DSN = Redact(r.DSN)
				s = &r
			}
			c.Stores[name] = s
		}
	}
	if c.Admin.Token != "" {
		c.Admin.Token = "xxxxx"
	}
	c.Brokers = make(map[string]*Broker, len(f.Brokers))
	for name, b := range f.Brokers {
		if b != nil {
			b = b.redacted()
		}
		c.Brokers[name] = b
	}
	return c
}

// annotate comments the printed values that the process running Herald or
// the OpenTelemetry variables decide, rather than the file.
func (f *File) annotate(root *yaml.Node) {
	if f.Node == "" {
		host, _ := os.Hostname()
		comment(root, fmt.Sprintf("default: the host name and process id of each process (%s-PID)", host), "node")
	}
	t := f.Tracing
	if t.OTLPEndpoint == "" {
		msg := "tracing off (set it, or OTEL_EXPORTER_OTLP_ENDPOINT)"
		if name, endpoint := EndpointFromEnv(); endpoint != "" {
			msg = fmt.Sprintf("tracing to %s, from %s", Redact(endpoint), name)
		}
		comment(root, msg, "tracing", "otlp_endpoint")
	}
	if t.SampleRatio == nil && os.Getenv("OTEL_TRACES_SAMPLER") != "" {
		comment(root, "OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG choose", "tracing", "sample_ratio")
	}
	if name, p := envProtocol(); t.Protocol == "" && p != "" {
		comment(root, "from "+name, "tracing", "protocol")
	}
	if t.ServiceName == "" && os.Getenv("OTEL_SERVICE_NAME") != "" {
		comment(root, "from OTEL_SERVICE_NAME", "tracing", "service_name")
	}
}

// comment sets the line comment of the value at path under root, when
// there is one.
func comment(root *yaml.Node, text string, path ...string) {
	n := root
	for _, key := range path {
		i := mappingIndex(n, key)
		if i < 0 {
			return
		}
		n = n.Content[i+1]
	}
	n.LineComment = text
}
