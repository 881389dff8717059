package awsconf

import (
	"fmt"

	"github.com/heraldhq/herald/broker"
)

// Publishing are the keys every AWS publisher entry has beside Settings.
type Publishing struct {
	// Source is the CloudEvents source. Defaults to broker.DefaultSource.
	Source string `yaml:"source,omitempty"`
	// MaxPayload is the largest payload accepted, in bytes; the adapter
	// has its default, and checks the whole message against the service's
	// own limit too.
	MaxPayload int `yaml:"max_payload,omitempty"`
	// Parallel is how many batch calls run at once; one partition key's
	// messages go in one sequence of calls, in order.
	Parallel int `yaml:"parallel,omitempty"`
}

// WithDefaults returns p with zero keys set: the source, and the
// adapter's payload limit and parallel calls.
func (p Publishing) WithDefaults(maxPayload, parallel int) Publishing {
	if p.Source == "" {
		p.Source = broker.DefaultSource
	}
	if p.MaxPayload == 0 {
		p.MaxPayload = maxPayload
	}
	if p.Parallel == 0 {
		p.Parallel = parallel
	}
	return p
}

// Validate checks the keys after defaults against the service's largest
// message, naming the one at fault.
func (p Publishing) Validate(service string, largest int) error {
	switch {
	case p.MaxPayload < 0:
		return fmt.Errorf("max_payload: must be positive, got %d", p.MaxPayload)
	case p.MaxPayload > largest:
		return fmt.Errorf("max_payload: %d is over %s's largest message (%d bytes)", p.MaxPayload, service, largest)
	case p.Parallel < 0:
		return fmt.Errorf("parallel: must be positive, got %d", p.Parallel)
	}
	return nil
}
