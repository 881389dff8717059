// Package config reads Herald's YAML file (docs/config.md), applies
// environment overrides and validates it, with errors that name the key at
// fault. It is data and validation only: package daemon opens and runs
// what a parsed file describes.
package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/lane"
	"github.com/heraldhq/herald/projection"
)

// File is the whole config file. Every key is documented in docs/config.md;
// unknown keys are rejected.
type File struct {
	// Node names this process in worker ids. Defaults to host-pid.
	Node string `yaml:"node"`
	// Store is the default store, the one named "default" (DefaultStore):
	// the store of every lane and projection that names none.
	Store Store `yaml:"store"`
	// Stores are further databases by name, each set like Store; a lane or
	// projection names its own with `store` (stores.go).
	Stores  map[string]*Store  `yaml:"stores,omitempty"`
	Brokers map[string]*Broker `yaml:"brokers"`
	Lanes   []Lane             `yaml:"lanes"`
	// Projections are run by `herald run` (projections.go).
	Projections []projection.Projection `yaml:"projections"`
	Admin       Admin                   `yaml:"admin"`
	Tracing     Tracing                 `yaml:"tracing"`
	Log         Log                     `yaml:"log"`
	// noDefaultStore is set when the file gives `stores` and no `store`
	// (nor the environment one): there is then no store named default.
	noDefaultStore bool
	// scope is the store a ForStore copy was cut down to ("" for a whole
	// file); projectionAt is the index in the whole file of each of its
	// Projections, for errors that name their key path.
	scope        string
	projectionAt []int
}

// Lane is one entry of `lanes`: a relay lane, whose settings, YAML keys,
// defaults and rules package lane declares (relay.Lane is the same type). Parse fills in every default, so
// that `herald config print` shows the effective values.
type Lane = lane.Lane

// Retry is a lane's `retry` section (lane.Retry).
type Retry = lane.Retry

// Retention is a lane's `retention` section (lane.Retention).
type Retention = lane.Retention

// Admin is the `admin` section.
type Admin struct {
	Addr string `yaml:"addr"`
	// Token, when set (or HERALD_ADMIN_TOKEN), lets a caller that sends it
	// as a bearer token act through the dashboard and the API: replay,
	// purge, retry now, pause and resume. Without it they are read-only.
	Token string `yaml:"token,omitempty"`
}

// Tracing is the `tracing` section: where `herald run` exports its
// OpenTelemetry spans (none when OTLPEndpoint is empty).
type Tracing struct {
	// OTLPEndpoint is an OTLP/HTTP collector, "http://host:4318"; a URL
	// without a path gets /v1/traces.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// SampleRatio is the share of new traces sampled, 0 to 1 (default 1);
	// spans in a trace the producer sampled follow the producer's decision.
	SampleRatio *float64 `yaml:"sample_ratio"`
	// ServiceName is the service.name resource attribute. Default:
	// OTEL_SERVICE_NAME, else herald.
	ServiceName string `yaml:"service_name"`
	// Protocol is http/protobuf (default) or grpc; empty takes
	// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL.
	Protocol string `yaml:"protocol"`
}

// Log is the `log` section.
type Log struct {
	// Level is debug, info (default), warn or error.
	Level string `yaml:"level"`
	// Format is text (default) or json.
	Format string `yaml:"format"`
}

// WithDefaults returns a copy of l with its defaults applied: level info,
// format text.
func (l Log) WithDefaults() Log {
	if l.Level == "" {
		l.Level = "info"
	}
	if l.Format == "" {
		l.Format = "text"
	}
	return l
}

// ErrInvalid marks every configuration error; the CLI exits 2 on it.
var ErrInvalid = errors.New("invalid config")

// Parse reads a config file's bytes laid over the embedded defaults
// (mergeOver): unknown keys are errors naming their path, then environment
// overrides, defaults and validation. d are the broker types and databases
// the file may name.
func Parse(data []byte, source string, d Drivers) (*File, error) {
	return parseOver(defaultYAML, data, source, d)
}

func parseOver(base string, data []byte, source string, d Drivers) (*File, error) {
	fail := func(err error) error { return fmt.Errorf("%w: %s: %v", ErrInvalid, source, err) }
	file, err := rootNode(data)
	if err != nil {
		return nil, fail(err)
	}
	fileBrokers := sectionKeys(file, "brokers") // before merging changes file's nodes
	projectionsOnly := projectsOnly(file)
	if err := brokersWithoutLanes(file, fileBrokers); err != nil {
		return nil, fail(err)
	}
	onlyNamedStores := file != nil && mappingIndex(file, "stores") >= 0 && mappingIndex(file, "store") < 0
	merged := file
	if base != "" {
		if merged, err = rootNode([]byte(base)); err != nil {
			return nil, fail(err)
		}
		merged = mergeOver(merged, file)
	}
	// Checked after merging, so that a broker entry that names no type is
	// checked against its default's type; the file's nodes keep their lines.
	if errs := d.checkKeys(merged, reflect.TypeOf(File{}), ""); len(errs) > 0 {
		return nil, fail(errors.Join(errs...))
	}
	var f File
	if merged != nil {
		if err := merged.Decode(&f); err != nil {
			return nil, fail(decodeError(err, file))
		}
	}
	if projectionsOnly {
		f.Lanes = nil
	}
	f.dropUnusedDefaultBrokers(fileBrokers)
	if onlyNamedStores {
		f.Store, f.noDefaultStore = Store{}, true
	}
	f.applyEnv(base != "" && !hasKey(file, "store", "dsn"))
	if err := d.decode(&f, file); err != nil {
		return nil, fail(err)
	}
	f.applyDefaults()
	if err := f.validate(d); err != nil {
		return nil, fail(err)
	}
	for i := range f.Lanes {
		f.Lanes[i] = f.Lanes[i].WithDefaults()
	}
	return &f, nil
}

// rootNode parses a document into its root mapping (nil when empty),
// pointing a syntax error at the line where it is.
func rootNode(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(data, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the file must be a mapping of sections (store, brokers, lanes, admin, tracing, log)", root.Line)
	}
	return root, nil
}

// Load reads the config file at path with drivers d; an empty path means
// "herald.yaml if it exists, else the embedded defaults".
func Load(path string, d Drivers) (*File, error) {
	if path == "" {
		if _, err := os.Stat("herald.yaml"); err != nil {
			// Not Defaults: the environment may still make them invalid.
			return Parse(nil, "embedded defaults", d)
		}
		path = "herald.yaml"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return Parse(data, path, d)
}

// Defaults returns the embedded defaults: SQLite in herald.db, an embedded
// NATS JetStream server with its data in herald-data/, and one lane
// "default" on herald_outbox publishing to herald.{topic}. d must ship the
// sqlite store and the nats broker with an embedded server.
func Defaults(d Drivers) *File {
	f, err := parseOver("", []byte(defaultYAML), "embedded defaults", d)
	if err != nil {
		panic(err) // the embedded defaults are tested with the binary's drivers
	}
	return f
}

// defaultYAML is what `herald run` uses with no config file.
const defaultYAML = `
store: {driver: sqlite, dsn: herald.db}
brokers:
  default:
    type: nats
    stream: HERALD
    subjects: ["herald.>"]
    create_stream: true
    embedded: {dir: herald-data, port: 4233}
lanes:
  - name: default
    table: herald_outbox
    broker: default
    destination: "herald.{topic}"
`

// applyEnv applies the HERALD_* variables. dsnFromDefaults says that the
// default store's DSN is the embedded defaults' SQLite file name, given by
// no one: a HERALD_STORE_DRIVER naming another database drops it, as a
// file's `driver` would (mergeOver), so that the store gets its driver's
// default DSN or an error asking for HERALD_STORE_DSN, not a SQLite file
// name judged as that database's DSN.
func (f *File) applyEnv(dsnFromDefaults bool) {
	if v := os.Getenv("HERALD_STORE_DRIVER"); v != "" {
		if v != f.Store.Driver && dsnFromDefaults {
			f.Store.DSN = ""
		}
		f.Store.Driver, f.Store.driverFromEnv, f.noDefaultStore = v, true, false
	}
	if v := os.Getenv("HERALD_STORE_DSN"); v != "" {
		f.Store.DSN, f.noDefaultStore = v, false
	}
	if v := os.Getenv("HERALD_NODE"); v != "" {
		f.Node = v
	}
	if v := os.Getenv("HERALD_ADMIN_ADDR"); v != "" {
		f.Admin.Addr = v
	}
	if v := os.Getenv("HERALD_ADMIN_TOKEN"); v != "" {
		f.Admin.Token = v
	}
}
