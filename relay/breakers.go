package relay

import (
	"log/slog"
	"reflect"
)

// newBreakers makes one breaker per broker connection: lanes given the same
// Publisher share it. It registers them with cfg.Health and returns each
// lane's breaker by lane name.
func newBreakers(cfg Config) map[string]*breaker {
	cfg.Health.setLogger(cfg.Logger)
	byPub := map[any]*breaker{}
	byLane := make(map[string]*breaker, len(cfg.Lanes))
	for _, l := range cfg.Lanes {
		var key any = l.Name
		if reflect.TypeOf(l.Publisher).Comparable() {
			key = l.Publisher
		}
		b, ok := byPub[key]
		if !ok {
			b = newBreaker(l.Broker, cfg.Logger.With(slog.String("node", cfg.Node)), cfg.ProbeInitial, cfg.ProbeMax)
			byPub[key] = b
			cfg.Health.add(b)
		}
		b.lanes = append(b.lanes, l.Name)
		byLane[l.Name] = b
	}
	return byLane
}
