package config

import (
	"fmt"
	"slices"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/broker/rabbitmq"
	"github.com/heraldhq/herald/broker/redis"
	"github.com/heraldhq/herald/broker/rocketmq"
	"github.com/heraldhq/herald/broker/webhook"
)

// Broker is one entry of `brokers`: its `type` picks which of the fields
// below is set, and the entry's other keys must belong to that type.
type Broker struct {
	Type     string
	NATS     *NATSBroker
	Stdout   *StdoutBroker
	Kafka    *KafkaBroker
	RabbitMQ *RabbitMQBroker
	Redis    *RedisBroker
	RocketMQ *RocketMQBroker
	Webhook  *WebhookBroker
}

// NATSBroker is a broker of type nats (NATS JetStream).
type NATSBroker struct {
	Type string `yaml:"type"`
	// URL of the server; ignored with embedded. Defaults to nats://127.0.0.1:4222.
	URL string `yaml:"url"`
	// Stream is the JetStream stream the subjects belong to.
	Stream string `yaml:"stream"`
	// Subjects of the stream, used when creating it. Defaults to ["herald.>"].
	Subjects []string `yaml:"subjects"`
	// CreateStream creates (or updates) the stream at start.
	CreateStream bool `yaml:"create_stream"`
	// Source is the CloudEvents source attribute. Defaults to "herald".
	Source string `yaml:"source"`
	// CredsFile is a NATS credentials file.
	CredsFile string `yaml:"creds_file"`
	// Embedded, when set, runs a NATS server inside Herald and publishes to it.
	Embedded *EmbeddedNATS `yaml:"embedded"`
}

// EmbeddedNATS is the `embedded` block of a nats broker.
type EmbeddedNATS struct {
	// Dir holds JetStream's data. Defaults to herald-data.
	Dir string `yaml:"dir"`
	// Host to listen on: loopback by default.
	Host string `yaml:"host"`
	// Port to listen on. Defaults to 4233 (not 4222, so that it does not
	// collide with a NATS server already running).
	Port int `yaml:"port"`
	// SyncAlways fsyncs every message before acking (slow, power-loss safe).
	SyncAlways bool `yaml:"sync_always"`
}

// StdoutBroker is a broker of type stdout: JSON lines on standard output.
type StdoutBroker struct {
	Type   string `yaml:"type"`
	Source string `yaml:"source"`
}

// KafkaBroker is a broker of type kafka; its keys are kafka.Config's.
type KafkaBroker struct {
	Type         string `yaml:"type"`
	kafka.Config `yaml:",inline"`
}

// RabbitMQBroker is a broker of type rabbitmq; its keys are rabbitmq.Config's.
type RabbitMQBroker struct {
	Type            string `yaml:"type"`
	rabbitmq.Config `yaml:",inline"`
}

// RedisBroker is a broker of type redis (Redis Streams); its keys are redis.Config's.
type RedisBroker struct {
	Type         string `yaml:"type"`
	redis.Config `yaml:",inline"`
}

// RocketMQBroker is a broker of type rocketmq; its keys are rocketmq.Config's.
type RocketMQBroker struct {
	Type            string `yaml:"type"`
	rocketmq.Config `yaml:",inline"`
}

// WebhookBroker is a broker of type webhook; its keys are webhook.Config's.
// The lane's destination is the URL template.
type WebhookBroker struct {
	Type           string `yaml:"type"`
	webhook.Config `yaml:",inline"`
}

// brokerTypes maps each type name to a function that sets that type's
// field of a Broker to a new, empty struct and returns it, for decoding
// (and for checking keys against the struct's type).
var brokerTypes = map[string]func(b *Broker) any{
	"kafka":    func(b *Broker) any { b.Kafka = &KafkaBroker{}; return b.Kafka },
	"rabbitmq": func(b *Broker) any { b.RabbitMQ = &RabbitMQBroker{}; return b.RabbitMQ },
	"redis":    func(b *Broker) any { b.Redis = &RedisBroker{}; return b.Redis },
	"rocketmq": func(b *Broker) any { b.RocketMQ = &RocketMQBroker{}; return b.RocketMQ },
	"webhook":  func(b *Broker) any { b.Webhook = &WebhookBroker{}; return b.Webhook },
	"nats":     func(b *Broker) any { b.NATS = &NATSBroker{}; return b.NATS },
	"stdout":   func(b *Broker) any { b.Stdout = &StdoutBroker{}; return b.Stdout },
}

// UnmarshalYAML reads `type` first, then decodes the entry into that
// type's struct. Unknown keys were already refused by checkKeys, with
// their paths.
func (b *Broker) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a broker must be a mapping with a type", n.Line)
	}
	b.Type = mappingValue(n, "type")
	newConfig, ok := brokerTypes[b.Type]
	if !ok {
		return fmt.Errorf("line %d: broker type %q is not one of %v", n.Line, b.Type, knownBrokerTypes())
	}
	return n.Decode(newConfig(b))
}

func knownBrokerTypes() []string {
	names := make([]string, 0, len(brokerTypes))
	for k := range brokerTypes {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func (b *Broker) applyDefaults() {
	if n := b.NATS; n != nil {
		if n.URL == "" {
			n.URL = "nats://127.0.0.1:4222"
		}
		if len(n.Subjects) == 0 {
			n.Subjects = []string{"herald.>"}
		}
		if e := n.Embedded; e != nil {
			if e.Dir == "" {
				e.Dir = "herald-data"
			}
			if e.Host == "" {
				e.Host = "127.0.0.1"
			}
			if e.Port == 0 {
				e.Port = 4233
			}
		}
	}
}

func (b *Broker) validate() error {
	switch {
	case b.Kafka != nil:
		return b.Kafka.WithDefaults().Validate()
	case b.RabbitMQ != nil:
		return b.RabbitMQ.WithDefaults().Validate()
	case b.Redis != nil:
		return b.Redis.WithDefaults().Validate()
	case b.RocketMQ != nil:
		return b.RocketMQ.WithDefaults().Validate()
	case b.Webhook != nil:
		return b.Webhook.WithDefaults().Validate()
	}
	if n := b.NATS; n != nil {
		if n.Stream == "" {
			return fmt.Errorf("stream is required")
		}
		if slices.Contains(n.Subjects, "") {
			return fmt.Errorf("subjects: an entry is empty")
		}
		if e := n.Embedded; e != nil && (e.Port < -1 || e.Port > 65535) {
			return fmt.Errorf("embedded.port: %d is not a port", e.Port)
		}
	}
	return nil
}
