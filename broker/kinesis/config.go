package kinesis

import (
	"github.com/heraldhq/herald/broker/awsconf"
)

// Config configures a Publisher.
type Config struct {
	// Settings: region, endpoint, profile and static credentials; the
	// SDK's standard chain fills what is left empty.
	awsconf.Settings `yaml:",inline"`
	// Publishing: source, max_payload (default DefaultMaxPayload, the
	// largest any payload can be and still fit a record once encoded; each
	// record is checked against MaxRecordSize) and parallel (default
	// DefaultParallel).
	awsconf.Publishing `yaml:",inline"`
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
	c.Publishing = c.Publishing.WithDefaults(DefaultMaxPayload, DefaultParallel)
	return c
}

// Validate checks the fields after defaults, naming the one at fault.
func (c Config) Validate() error {
	if err := c.Settings.Validate(); err != nil {
		return err
	}
	return c.Publishing.Validate("Kinesis", MaxRecordSize)
}
