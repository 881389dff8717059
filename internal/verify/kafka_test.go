package verify

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/config"
)

// TestKafkaChildEntryDialsViaProxies: the relays' Kafka entry is seeded
// with the proxies and maps every advertised broker to its own proxy, in
// the YAML the children read.
func TestKafkaChildEntryDialsViaProxies(t *testing.T) {
	tgt := &kafkaTarget{cfg: kafka.Config{Brokers: []string{"kafka-0:9092"}, ClientID: "app"},
		brokers: []string{"kafka-0:9092", "kafka-1:9092"}}
	e := tgt.childEntry([]string{"127.0.0.1:4001", "127.0.0.1:4002"})
	b, err := yaml.Marshal(config.File{Brokers: map[string]*config.Broker{"verify": e}})
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"- 127.0.0.1:4001\n", "- 127.0.0.1:4002\n", "kafka-0:9092: 127.0.0.1:4001", "kafka-1:9092: 127.0.0.1:4002", "client_id: app"} {
		if !strings.Contains(got, want) {
			t.Fatalf("child config lacks %q:\n%s", want, got)
		}
	}
}
