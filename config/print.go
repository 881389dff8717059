package config

import (
	"go.yaml.in/yaml/v3"
)

// hidden replaces a secret in printed config.
const hidden = "xxxxx"

// MarshalYAML writes the broker as the struct of its type.
func (b Broker) MarshalYAML() (any, error) {
	switch {
	case b.NATS != nil:
		return b.NATS, nil
	case b.Stdout != nil:
		return b.Stdout, nil
	case b.Kafka != nil:
		return b.Kafka, nil
	case b.RabbitMQ != nil:
		return b.RabbitMQ, nil
	case b.Redis != nil:
		return b.Redis, nil
	case b.RocketMQ != nil:
		return b.RocketMQ, nil
	case b.Webhook != nil:
		return b.Webhook, nil
	}
	return map[string]string{"type": b.Type}, nil
}

// Print returns the effective config (file over defaults, environment
// applied) as YAML, with every password, secret and credential in a URL or
// DSN replaced by xxxxx, for `herald config print`.
func (f *File) Print() ([]byte, error) {
	c := *f
	c.Store.DSN = Redact(c.Store.DSN)
	if c.Admin.Token != "" {
		c.Admin.Token = "xxxxx"
	}
	c.Brokers = make(map[string]*Broker, len(f.Brokers))
	for name, b := range f.Brokers {
		c.Brokers[name] = redactBroker(b)
	}
	return yaml.Marshal(&c)
}

// redactBroker returns a copy of b without its secrets.
func redactBroker(b *Broker) *Broker {
	if b == nil {
		return nil
	}
	r := *b
	if n := b.NATS; n != nil {
		c := *n
		c.URL = Redact(c.URL)
		r.NATS = &c
	}
	if k := b.Kafka; k != nil {
		c := *k
		if k.SASL != nil {
			s := *k.SASL
			s.Password = hideIfSet(s.Password)
			c.SASL = &s
		}
		r.Kafka = &c
	}
	if q := b.RabbitMQ; q != nil {
		c := *q
		c.URL = Redact(c.URL)
		r.RabbitMQ = &c
	}
	if d := b.Redis; d != nil {
		c := *d
		c.URL = Redact(c.URL)
		r.Redis = &c
	}
	if m := b.RocketMQ; m != nil {
		c := *m
		c.SecretKey = hideIfSet(c.SecretKey)
		r.RocketMQ = &c
	}
	if w := b.Webhook; w != nil {
		c := *w
		c.Secret = hideIfSet(c.Secret)
		r.Webhook = &c
	}
	return &r
}

func hideIfSet(s string) string {
	if s == "" {
		return ""
	}
	return hidden
}
