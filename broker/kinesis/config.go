package kinesis

import (
	"fmt"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/awsconf"
)

// Config configures a Publisher.
type Config struct {
	// Settings: region, endpoint, profile and static credentials; the
	// SDK's standard chain fills what is left empty.
	awsconf.Settings `yaml:",inline"`
	// Source is the CloudEvents source. Defaults to broker.DefaultSource.
	Source string `yaml:"source,omitempty"`
	// MaxPayload is the largest payload accepted, in bytes. Defaults to
	// DefaultMaxPayload, the largest any payload can be and still fit a
	// record once encoded; each record is checked against MaxRecordSize.
	MaxPayload int `yaml:"max_payload,omitempty"`
	// Parallel is how many PutRecords calls run at once. Defaults to 4.
	// One partition key's records go in one sequence of calls.
	Parallel int `yaml:"parallel,omitempty"`
}

// Limits and defaults.
const (
	// MaxRecordSize is Kinesis's limit on a record's data and partition
	// key (1 MiB).
	MaxRecordSize = 1 << 20
	// MaxRequestSize is PutRecords's limit on a call (5 MiB), and
	// MaxRequestRecords on its records.
	MaxRequestSize    = 5 << 20
	MaxRequestRecords = 500
	// EnvelopeReserve is what the default payload limit keeps for the
	// record's attributes, headers and partition key.
	EnvelopeReserve = 16 << 10
	// DefaultMaxPayload is the largest payload that fits a record in the
	// worst case, base64 (4 bytes for 3): 774,144 bytes. A JSON payload
	// travels as it is and could be larger; max_payload may say so.
	DefaultMaxPayload = (MaxRecordSize - EnvelopeReserve) / 4 * 3
	DefaultParallel   = 4
)

// WithDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Source == "" {
		c.Source = broker.DefaultSource
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if c.Parallel == 0 {
		c.Parallel = DefaultParallel
	}
	return c
}

// Validate checks the fields after defaults, naming the one at fault.
func (c Config) Validate() error {
	if err := c.Settings.Validate(); err != nil {
		return err
	}
	switch {
	case c.MaxPayload < 0:
		return fmt.Errorf("max_payload: must be positive, got %d", c.MaxPayload)
	case c.MaxPayload > MaxRecordSize:
		return fmt.Errorf("max_payload: %d is over Kinesis's largest record (%d bytes)", c.MaxPayload, MaxRecordSize)
	case c.Parallel < 0:
		return fmt.Errorf("parallel: must be positive, got %d", c.Parallel)
	}
	return nil
}
