// Package sqs is Herald's Amazon SQS adapter: a batch Publisher
// (SendMessageBatch) to standard and FIFO queues, and a Subscriber (long
// polling, visibility extended while a message is applied, deleted after
// the ledger commit) for projectors. The lane's destination is a queue
// name or a queue URL.
//
// A message is the event's payload as its body and the CloudEvents
// attributes as String message attributes named ce-id, ce-type, …
// (package broker/internal/awsmsg has the details: a body that is not text
// travels base64, user headers that do not fit as attributes travel as one
// JSON attribute). On a FIFO queue (a name ending in .fifo) the partition
// key is the MessageGroupId, so one key's events are stored in order, and
// the event id is the MessageDeduplicationId, so a republished event is
// dropped within SQS's 5-minute deduplication interval.
package sqs

import (
	"errors"
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
	// DefaultMaxPayload. A queue's own MaximumMessageSize (read from the
	// queue) is checked too, against the whole message.
	MaxPayload int `yaml:"max_payload,omitempty"`
	// MessageGroupID is the MessageGroupId of events without a partition
	// key on a FIFO queue. Empty: such events are refused (dead at once,
	// the error says to set this or give the event a key).
	MessageGroupID string `yaml:"message_group_id,omitempty"`
	// Parallel is how many SendMessageBatch calls run at once. Defaults
	// to 8. One partition key's messages go in one sequence of calls.
	Parallel int `yaml:"parallel,omitempty"`
}

// Defaults for zero Config fields.
const (
	// DefaultMaxMessageSize is a queue's MaximumMessageSize when the queue
	// does not say (SQS's long-standing default, 256 KiB).
	DefaultMaxMessageSize = 262_144
	// AttributeReserve is what the default payload limit keeps for the
	// message attributes (the CloudEvents attributes and user headers),
	// which SQS counts against the same limit.
	AttributeReserve = 8 << 10
	// DefaultMaxPayload is the payload limit unless max_payload says.
	DefaultMaxPayload = DefaultMaxMessageSize - AttributeReserve
	DefaultParallel   = 8
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
	case c.MaxPayload > maxMessageSizeCap:
		return fmt.Errorf("max_payload: %d is over SQS's largest message (%d bytes)", c.MaxPayload, maxMessageSizeCap)
	case c.Parallel < 0:
		return fmt.Errorf("parallel: must be positive, got %d", c.Parallel)
	case len(c.MessageGroupID) > 128:
		return errors.New("message_group_id: SQS takes at most 128 characters")
	}
	return nil
}

// maxMessageSizeCap is the largest MaximumMessageSize a queue can have
// (1 MiB since August 2025).
const maxMessageSizeCap = 1 << 20
