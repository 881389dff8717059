package mqtt

import (
	"context"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/internal/testenv"
)

func TestTail(t *testing.T) {
	url := requireMQTT(t)
	prefix := testenv.Name("herald-tail")
	p := newPublisher(t, Config{URL: url})
	cfg := &BrokerConfig{Config: Config{URL: url}}
	tpl := broker.MustParseTemplate(prefix + "/{topic}/{event_type}")
	brokertest.RunTail(t, p, prefix+"/t/Gift", func(ctx context.Context, ready func(), fn func(herald.Event)) error {
		return cfg.Tail(ctx, broker.TailRequest{Template: tpl, Watching: func(string) { ready() },
			Fn: func(_ string, ev herald.Event) { fn(ev) }})
	})
}

// Rule: a placeholder sharing a level with other text becomes + and the
// template's own pattern selects the topics.
func TestTailFilter(t *testing.T) {
	for tpl, want := range map[string]string{
		"a/{tenant}/b": "a/+/b", "a/x-{tenant}/b": "a/+/b", "{topic}": "+", "a.{topic}/c": "+/c",
	} {
		got, match := tailFilter(broker.MustParseTemplate(tpl))
		if got != want {
			t.Errorf("%s: %s, want %s", tpl, got, want)
		}
		if (match != nil) != (tpl == "a/x-{tenant}/b" || tpl == "a.{topic}/c") {
			t.Errorf("%s: match %v", tpl, match)
		}
	}
}
