package config

import (
	"fmt"

	"github.com/heraldhq/herald/broker"
)

// validateProjections checks the `projections` entries without a
// database: each entry (projection.Projection.Validate), unique names, and a
// source broker that exists and can feed a projection.
func (f *File) validateProjections() []error {
	var errs []error
	seen := map[string]bool{}
	for i, p := range f.Projections {
		path := fmt.Sprintf("projections[%d]", i)
		if err := p.Validate(path); err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[p.Name] {
			errs = append(errs, fmt.Errorf("%s.name: projection %q is defined twice", path, p.Name))
		}
		seen[p.Name] = true
		if err := f.checkStoreName(path+".store", p.Store); err != nil {
			errs = append(errs, err)
		}
		if p.Source.Broker == "" {
			continue
		}
		b := f.Brokers[p.Source.Broker]
		switch {
		case b == nil:
			errs = append(errs, fmt.Errorf("%s.source.broker: no broker %q", path, p.Source.Broker))
		case !canSubscribe(b):
			errs = append(errs, fmt.Errorf("%s.source.broker: a %s broker cannot feed a projection yet (nats, kafka, rocketmq, sqs and kinesis can, or an outbox table)",
				path, b.Type))
		}
	}
	return errs
}

// canSubscribe says whether b's driver can open a projection's subscriber.
func canSubscribe(b *Broker) bool {
	_, ok := b.Config.(broker.SubscriberOpener)
	return ok
}
