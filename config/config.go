// Package config reads Herald's YAML file (docs/config.md), applies
// environment overrides, validates it with errors that name the key at
// fault, and wires the store, brokers and relay it describes.
package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"

	"go.yaml.in/yaml/v3"
)

// File is the whole config file. Every key is documented in docs/config.md;
// unknown keys are rejected.
type File struct {
	// Node names this process in worker ids. Defaults to host-pid.
	Node    string             `yaml:"node"`
	Store   Store              `yaml:"store"`
	Brokers map[string]*Broker `yaml:"brokers"`
	Lanes   []Lane             `yaml:"lanes"`
	Admin   Admin              `yaml:"admin"`
	Tracing Tracing            `yaml:"tracing"`
	Log     Log                `yaml:"log"`
}

// Store is the `store` section.
type Store struct {
	// Driver is sqlite, mysql or postgres.
	Driver string `yaml:"driver"`
	// DSN is the connection string (a file name for sqlite).
	DSN string `yaml:"dsn"`
	// Migrate runs migrations when `herald run` starts. Defaults to true.
	Migrate *bool `yaml:"migrate"`
	// Synchronous (sqlite only): full (default, survives power loss) or normal.
	Synchronous string `yaml:"synchronous"`
}

// Lane is one entry of `lanes`.
type Lane struct {
	Name           string    `yaml:"name"`
	Table          string    `yaml:"table"`
	Tenant         string    `yaml:"tenant"`
	Broker         string    `yaml:"broker"`
	Destination    string    `yaml:"destination"`
	IncludeTypes   []string  `yaml:"include_types"`
	ExcludeTypes   []string  `yaml:"exclude_types"`
	Ordering       string    `yaml:"ordering"`
	OnDead         string    `yaml:"on_dead"`
	Concurrency    int       `yaml:"concurrency"`
	BatchSize      int       `yaml:"batch_size"`
	PollInterval   Duration  `yaml:"poll_interval"`
	PublishTimeout Duration  `yaml:"publish_timeout"`
	Lease          Duration  `yaml:"lease"`
	Retry          Retry     `yaml:"retry"`
	DiscardAfter   Duration  `yaml:"discard_after"`
	Retention      Retention `yaml:"retention"`
	// MaxPayload is the largest payload the lane accepts; 0 takes the broker's limit.
	MaxPayload int `yaml:"max_payload"`
	// Source is relay.Lane.Source (poll or log), validated there.
	Source string `yaml:"source"`
}

// Retry is a lane's `retry` section.
type Retry struct {
	Strategy    string   `yaml:"strategy"`
	Initial     Duration `yaml:"initial"`
	Max         Duration `yaml:"max"`
	MaxAttempts int      `yaml:"max_attempts"`
	Jitter      string   `yaml:"jitter"`
}

// Retention is a lane's `retention` section.
type Retention struct {
	Delivered Duration `yaml:"delivered"`
	Dead      Duration `yaml:"dead"`
	Active    Duration `yaml:"active"`
	Interval  Duration `yaml:"interval"`
	BatchSize int      `yaml:"batch_size"`
}

// Admin is the `admin` section.
type Admin struct {
	Addr string `yaml:"addr"`
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

// ErrInvalid marks every configuration error; the CLI exits 2 on it.
var ErrInvalid = errors.New("invalid config")

// Parse reads a config file's bytes laid over the embedded defaults
// (mergeOver): unknown keys are errors naming their path, then environment
// overrides, defaults and validation.
func Parse(data []byte, source string) (*File, error) {
	return parseOver(defaultYAML, data, source)
}

func parseOver(base string, data []byte, source string) (*File, error) {
	fail := func(err error) error { return fmt.Errorf("%w: %s: %v", ErrInvalid, source, err) }
	file, err := rootNode(data)
	if err != nil {
		return nil, fail(err)
	}
	fileBrokers := sectionKeys(file, "brokers") // before merging changes file's nodes
	merged := file
	if base != "" {
		if merged, err = rootNode([]byte(base)); err != nil {
			return nil, fail(err)
		}
		merged = mergeOver(merged, file)
	}
	// Checked after merging, so that a broker entry that names no type is
	// checked against its default's type; the file's nodes keep their lines.
	if errs := checkKeys(merged, reflect.TypeOf(File{}), ""); len(errs) > 0 {
		return nil, fail(errors.Join(errs...))
	}
	var f File
	if merged != nil {
		if err := merged.Decode(&f); err != nil {
			return nil, fail(decodeError(err, file))
		}
	}
	f.dropUnusedDefaultBrokers(fileBrokers)
	f.applyEnv()
	f.applyDefaults()
	if err := f.validate(); err != nil {
		return nil, fail(err)
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

// Load reads the config file at path; an empty path means "herald.yaml if
// it exists, else the embedded defaults".
func Load(path string) (*File, error) {
	if path == "" {
		if _, err := os.Stat("herald.yaml"); err != nil {
			return Defaults(), nil
		}
		path = "herald.yaml"
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return Parse(data, path)
}

// Defaults returns the embedded defaults: SQLite in herald.db, an embedded
// NATS JetStream server with its data in herald-data/, and one lane
// "default" on herald_outbox publishing to herald.{topic}.
func Defaults() *File {
	f, err := parseOver("", []byte(defaultYAML), "embedded defaults")
	if err != nil {
		panic(err) // the embedded defaults are tested
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

func (f *File) applyEnv() {
	if v := os.Getenv("HERALD_STORE_DRIVER"); v != "" {
		f.Store.Driver = v
	}
	if v := os.Getenv("HERALD_STORE_DSN"); v != "" {
		f.Store.DSN = v
	}
	if v := os.Getenv("HERALD_NODE"); v != "" {
		f.Node = v
	}
	if v := os.Getenv("HERALD_ADMIN_ADDR"); v != "" {
		f.Admin.Addr = v
	}
}
