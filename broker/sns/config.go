// Package sns is Herald's Amazon SNS adapter: a batch Publisher
// (PublishBatch) to standard and FIFO topics. The lane's destination is a
// topic ARN, or a topic name when the entry sets account_id.
//
// A message is the event's payload as its body and the CloudEvents
// attributes as String message attributes named ce-id, ce-type, … (as in
// broker/sqs: package broker/internal/awsmsg). On a FIFO topic (a name
// ending in .fifo) the partition key is the MessageGroupId and the event
// id the MessageDeduplicationId. SNS stores nothing: subscribe an SQS
// queue with raw message delivery (the attributes arrive as the queue
// message's) and read it with broker/sqs, which also unwraps SNS's JSON
// envelope when raw delivery is off.
package sns

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/heraldhq/herald/broker/awsconf"
)

// Config configures a Publisher.
type Config struct {
	// Settings: region, endpoint, profile and static credentials; the
	// SDK's standard chain fills what is left empty.
	awsconf.Settings `yaml:",inline"`
	// AccountID is the AWS account of the topics, so that a destination
	// may be a topic name (its ARN is built from the partition, region and
	// account). Empty: destinations must be topic ARNs.
	AccountID string `yaml:"account_id,omitempty"`
	// Publishing: source, max_payload (default DefaultMaxPayload; the
	// whole message is checked against MaxMessageSize too) and parallel
	// (default DefaultParallel).
	awsconf.Publishing `yaml:",inline"`
	// MessageGroupID is the MessageGroupId of events without a partition
	// key on a FIFO topic. Empty: such events are refused (dead at once).
	MessageGroupID string `yaml:"message_group_id,omitempty"`
}

// Limits and defaults.
const (
	// MaxMessageSize is SNS's limit on a message with its attributes,
	// and on a PublishBatch call (256 KiB).
	MaxMessageSize = 262_144
	// AttributeReserve is what the default payload limit keeps for the
	// message attributes.
	AttributeReserve  = 8 << 10
	DefaultMaxPayload = MaxMessageSize - AttributeReserve
	DefaultParallel   = 8
)

// WithDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.Publishing = c.Publishing.WithDefaults(DefaultMaxPayload, DefaultParallel)
	return c
}

var accountID = regexp.MustCompile(`^[0-9]{12}$`)

// Validate checks the fields after defaults, naming the one at fault.
func (c Config) Validate() error {
	if err := c.Settings.Validate(); err != nil {
		return err
	}
	if err := c.Publishing.Validate("SNS", MaxMessageSize); err != nil {
		return err
	}
	switch {
	case c.AccountID != "" && !accountID.MatchString(c.AccountID):
		return fmt.Errorf("account_id: want 12 digits, got %q", c.AccountID)
	case len(c.MessageGroupID) > 128:
		return errors.New("message_group_id: SNS takes at most 128 characters")
	}
	return nil
}
