package giftwall

import (
	_ "embed"
	"fmt"
	"maps"
	"slices"

	"github.com/heraldhq/herald/config"
)

var (
	//go:embed mqtt.yaml
	mqttYAML string
	//go:embed pubsub.yaml
	pubsubYAML string
)

// demoBrokers are the config files of `herald demo --broker NAME` besides
// the default (nats: DemoConfigYAML, an embedded server).
var demoBrokers = map[string]string{"mqtt": mqttYAML, "pubsub": pubsubYAML}

// DemoBrokers names the brokers `herald demo --broker` takes.
func DemoBrokers() []string {
	return append([]string{"nats"}, slices.Sorted(maps.Keys(demoBrokers))...)
}

// DemoConfigFor returns the demo's config file on broker name (the file
// of that name beside this one), DemoConfig for "nats", parsed with d (as
// DemoConfig).
func DemoConfigFor(name string, d config.Drivers) (*config.File, error) {
	if name == "nats" || name == "" {
		return DemoConfig(d)
	}
	y, ok := demoBrokers[name]
	if !ok {
		return nil, fmt.Errorf("%w: --broker %q: the demo runs on %v", config.ErrInvalid, name, DemoBrokers())
	}
	return config.Parse([]byte(y), "giftwall demo on "+name, d)
}
