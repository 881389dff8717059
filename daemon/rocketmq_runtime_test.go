package daemon

import (
	"fmt"
	"testing"

	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
)

// TestRocketMQFromYAML relays through the official RocketMQ client to
// rmqfake, the publisher built from YAML (name servers, group, tag mode,
// key headers), and checks the broker holds every event tagged by type.
func TestRocketMQFromYAML(t *testing.T) {
	c, err := rmqfake.New(rmqfake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	relayFromYAML(t, fmt.Sprintf("{type: rocketmq, name_servers: [%q], group: herald, tag_mode: event_type, send_timeout: 2s}",
		c.NameServer()), "wired_{event_type}", 20)
	msgs := c.Messages("wired_Wired")
	if len(msgs) < 20 {
		t.Fatalf("the broker holds %d messages on wired_Wired, want 20", len(msgs))
	}
	for _, m := range msgs {
		if m.Tags != "Wired" || len(m.Keys) == 0 || m.Properties["CE_id"] != m.Keys[0] {
			t.Fatalf("message %+v: want tag Wired and the event id as first key and CE_id", m)
		}
	}
}
