package verify

import (
	"context"
	"sort"
	"strings"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/config"
)

// target is the lane's broker as verify uses it: a scratch destination it
// creates and removes, the broker entry its relay children publish
// through (the fault proxy in front of the broker), and a subscriber that
// reads back everything the children published.
type target interface {
	// describe names the scratch destination, for the report.
	describe() string
	// upstreams are the broker's host:port addresses, one proxy in front
	// of each (a Kafka cluster's brokers; one address elsewhere).
	upstreams() []string
	// childEntry is the broker entry of the children's config, reaching
	// upstreams()[i] at via[i] (its proxy's host:port).
	childEntry(via []string) *config.Broker
	// destination is the children's lane destination.
	destination() broker.Template
	// subscribe opens the consumer verify reads back with.
	subscribe(ctx context.Context) (broker.Subscriber, error)
	// cleanup removes the scratch destination (and any server verify
	// started); keep leaves the destination.
	cleanup(ctx context.Context, keep bool) error
}

// targetOpeners are the brokers verify can read back, by type.
var targetOpeners = map[string]func(ctx context.Context, b *config.Broker, s scratch) (target, error){
	"kafka":    openKafka,
	"nats":     openNATS,
	"rabbitmq": openRabbit,
	"redis":    openRedis,
}

// scratch names what one verification creates.
type scratch struct {
	// id is unique per run: lower case letters and digits.
	id string
	// dir is verify's temporary directory.
	dir string
}

// openTarget opens the scratch destination on b, or refuses a broker
// verify cannot read back (exit 2, with the reason).
func openTarget(ctx context.Context, name string, b *config.Broker, s scratch) (target, error) {
	open, ok := targetOpeners[b.Type]
	if !ok {
		var types []string
		for t := range targetOpeners {
			types = append(types, t)
		}
		sort.Strings(types)
		return nil, invalidf("brokers.%s: verify cannot read back a broker of type %s (it verifies %s): "+
			"it must read every event the relays publish to reconcile them", name, b.Type, strings.Join(types, ", "))
	}
	return open(ctx, b, s)
}
