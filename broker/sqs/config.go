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

	"github.com/heraldhq/herald/broker/awsconf"
)

// Config configures a Publisher.
type Config struct {
	// Settings: region, endpoint, profile and static credentials; the
	// SDK's standard chain fills what is left empty.
	awsconf.Settings `yaml:",inline"`
	// Publishing: source, max_payload (default DefaultMaxPayload; a
	// queue's own MaximumMessageSize, read from the queue, is checked too,
	// against the whole message) and parallel (default DefaultParallel).
	awsconf.Publishing `yaml:",inline"`
	// MessageGroupID is the MessageGroupId of events without a partition
	// key on a FIFO queue. Empty: such events are refused (dead at once,
	// the error says to set this or give the event a key).
	MessageGroupID string `yaml:"message_group_id,omitempty"`
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
	c.Publishing = c.Publishing.WithDefaults(DefaultMaxPayload, DefaultParallel)
	return c
}

// Validate checks the fields after defaults, naming the one at fault.
func (c Config) Validate() error {
	if err := c.Settings.Validate(); err != nil {
		return err
	}
	if err := c.Publishing.Validate("SQS", maxMessageSizeCap); err != nil {
		return err
	}
	if len(c.MessageGroupID) > 128 {
		return errors.New("message_group_id: SQS takes at most 128 characters")
	}
	return nil
}

// maxMessageSizeCap is the largest MaximumMessageSize a queue can have
// (1 MiB since August 2025).
const maxMessageSizeCap = 1 << 20
