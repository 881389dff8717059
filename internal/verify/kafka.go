package verify

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/config"
)

// kafkaTarget is a scratch topic, herald_verify_<id>, with as many
// partitions as keys need no more than 4, read back by a consumer group
// of verify's own and deleted at the end. Kafka clients connect to every
// broker at the address the cluster advertises, past a proxy in front of
// the seeds alone, so verify puts a proxy in front of each broker the
// metadata lists and gives the relays the map (kafka.Config.DialVia).
type kafkaTarget struct {
	cfg     kafka.Config
	topic   string
	adm     *kadm.Client
	brokers []string // advertised host:port of every broker, sorted
}

func openKafka(ctx context.Context, b *config.Broker, s scratch) (target, error) {
	c, ok := b.Config.(*kafka.BrokerConfig)
	if !ok {
		return nil, fmt.Errorf("verify: kafka broker entry of type %T", b.Config)
	}
	cfg := c.WithDefaults()
	if cfg.TLS != nil || cfg.SASL != nil {
		return nil, invalidf("kafka: verify does not create its scratch topic over TLS or SASL yet; run it against a plain listener")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return nil, fmt.Errorf("verify: kafka client: %w", err)
	}
	t := &kafkaTarget{cfg: cfg, topic: "herald_verify_" + s.id, adm: kadm.NewClient(cl)}
	resp, err := t.adm.CreateTopic(ctx, 4, -1, nil, t.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.adm.Close()
		return nil, fmt.Errorf("verify: create topic %s on %s: %w", t.topic, strings.Join(cfg.Brokers, ","), err)
	}
	if err := t.listBrokers(ctx); err != nil {
		_ = t.cleanup(ctx, false)
		return nil, err
	}
	return t, nil
}

// listBrokers reads the advertised address of every broker.
func (t *kafkaTarget) listBrokers(ctx context.Context) error {
	md, err := t.adm.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("verify: kafka brokers of %s: %w", strings.Join(t.cfg.Brokers, ","), err)
	}
	for _, b := range md.Brokers {
		t.brokers = append(t.brokers, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
	}
	sort.Strings(t.brokers)
	return nil
}

func (t *kafkaTarget) describe() string {
	return fmt.Sprintf("Kafka topic %s at %s", t.topic, strings.Join(t.cfg.Brokers, ","))
}

// upstreams are the brokers, each behind a proxy of its own.
func (t *kafkaTarget) upstreams() []string { return t.brokers }

// childEntry seeds the relays with the proxies and maps each advertised
// address to its proxy.
func (t *kafkaTarget) childEntry(via []string) *config.Broker {
	c := t.cfg
	c.Brokers, c.DialVia = via, map[string]string{}
	for i, b := range t.brokers {
		c.DialVia[b] = via[i]
	}
	return &config.Broker{Type: "kafka", Config: &kafka.BrokerConfig{Config: c}}
}

func (t *kafkaTarget) destination() broker.Template { return broker.MustParseTemplate(t.topic) }

func (t *kafkaTarget) subscribe(ctx context.Context) (broker.Subscriber, error) {
	return kafka.NewSubscriber(ctx, kafka.SubscriberConfig{Brokers: t.cfg.Brokers, Group: t.topic, Topics: []string{t.topic}})
}

func (t *kafkaTarget) cleanup(ctx context.Context, keep bool) error {
	defer t.adm.Close()
	if keep {
		return nil
	}
	resp, err := t.adm.DeleteTopic(ctx, t.topic)
	if err == nil {
		err = resp.Err
	}
	// The consumer groups (verify's and a scratch projection's) name the
	// topic gone; a group that never existed is no error worth a word.
	_, _ = t.adm.DeleteGroups(ctx, t.topic, projectionGroup(t.topic))
	return err
}
