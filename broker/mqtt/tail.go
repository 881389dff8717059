package mqtt

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// Tail calls fn for each message published to a topic matching filter
// (MQTT's + and #) from now on, until ctx ends, then returns nil. It
// subscribes with a clean session of its own (QoS 0, retained messages
// skipped), so the lane's subscribers lose nothing; ready, if not nil, is
// called once the subscription is confirmed. match, if not nil, further
// selects topics (a template whose placeholder shares a level).
func Tail(ctx context.Context, conn Config, filter string, match *regexp.Regexp, ready func(), fn func(topic string, ev herald.Event)) error {
	conn = conn.WithDefaults()
	msgs := make(chan paho.Message, 256)
	c, err := dial(ctx, conn, randomID("herald-tail-"), func(o *paho.ClientOptions) { o.SetCleanSession(true) })
	if err != nil {
		return fmt.Errorf("mqtt: tail: %w", err)
	}
	defer c.Disconnect(100)
	tok := c.Subscribe(filter, 0, func(_ paho.Client, m paho.Message) {
		if m.Retained() {
			return // kept from before: not what arrives from now on
		}
		select {
		case msgs <- m:
		case <-ctx.Done():
		}
	})
	<-tok.Done()
	if err := subscribed(tok); err != nil {
		return fmt.Errorf("mqtt: tail %s: %w", filter, err)
	}
	if ready != nil {
		ready()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-msgs:
			if match == nil || match.MatchString(m.Topic()) {
				fn(m.Topic(), MessageEvent(m.Payload()))
			}
		}
	}
}

// tailFilter is the topic filter covering a template's topics: each level
// holding a placeholder becomes +, and when a placeholder shares a level
// with other text the template's regexp selects the topics.
func tailFilter(t broker.Template) (string, *regexp.Regexp) {
	const mark = "\x00"
	rendered := t.Render(herald.Event{Topic: mark, Type: mark, Tenant: mark, PartitionKey: mark})
	levels := strings.Split(rendered, "/")
	exact := true
	for i, l := range levels {
		if strings.Contains(l, mark) {
			exact = exact && l == mark
			levels[i] = "+"
		}
	}
	if exact {
		return strings.Join(levels, "/"), nil
	}
	return strings.Join(levels, "/"), regexp.MustCompile(t.Regexp())
}
