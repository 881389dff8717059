package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/broker"
)

// Broker is one entry of `brokers`: its `type` names the broker.Driver
// that decoded the entry's other keys into Config.
type Broker struct {
	Type string
	// Config is the entry as its driver reads it (kafka.BrokerConfig, …);
	// set by Parse.
	Config broker.DriverConfig
	node   *yaml.Node
}

// UnmarshalYAML keeps the entry for its driver: which one depends on the
// drivers passed to Parse, which a yaml.Unmarshaler cannot see.
func (b *Broker) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a broker must be a mapping with a type", n.Line)
	}
	b.Type = mappingValue(n, "type")
	b.node = n
	return nil
}

// decode decodes the entry with its type's driver; file is the file's own
// document, for naming the key at a type error's line.
func (b *Broker) decode(d Drivers, file *yaml.Node) error {
	drv := d.broker(b.Type)
	if drv == nil {
		return fmt.Errorf("line %d: broker type %q is not one of %v", b.node.Line, b.Type, d.brokerTypes())
	}
	b.Config = drv.NewConfig()
	if err := b.node.Decode(b.Config); err != nil {
		return decodeError(err, file)
	}
	if df, ok := b.Config.(broker.Defaulter); ok {
		df.ApplyDefaults()
	}
	return nil
}

// MarshalYAML writes the entry as `type` followed by its config's keys.
func (b Broker) MarshalYAML() (any, error) {
	return withKind("type", b.Type, b.Config)
}

// withKind encodes cfg as a mapping whose first key is kind: value.
func withKind(kind, value string, cfg any) (*yaml.Node, error) {
	var n yaml.Node
	if cfg != nil {
		if err := n.Encode(cfg); err != nil {
			return nil, err
		}
	}
	if n.Kind != yaml.MappingNode {
		n = yaml.Node{Kind: yaml.MappingNode}
	}
	n.Style = 0 // a config with no keys encodes as {}; the printed entry is a block
	head := []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: kind},
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: value},
	}
	n.Content = append(head, n.Content...)
	return &n, nil
}

// redacted returns a copy of b without its secrets (broker.Redactor).
func (b *Broker) redacted() *Broker {
	r := *b
	if rd, ok := b.Config.(broker.Redactor); ok {
		r.Config = rd.Redacted()
	}
	return &r
}

// payloadLimit is the broker's payload limit as its config or server says
// (broker.PayloadLimiter), 0 when unknown.
func (b *Broker) payloadLimit() int {
	if pl, ok := b.Config.(broker.PayloadLimiter); ok {
		return pl.PayloadLimit()
	}
	return 0
}

// checkDestination checks a lane's destination against the broker
// (broker.DestinationChecker).
func (b *Broker) checkDestination(tpl broker.Template) error {
	if dc, ok := b.Config.(broker.DestinationChecker); ok {
		return dc.CheckDestination(tpl)
	}
	return nil
}
