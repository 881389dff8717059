package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/store"
)

// adviceTimeout bounds the read of a store's advice: it only adds warnings,
// so a slow answer is not worth holding up the start.
const adviceTimeout = 5 * time.Second

// logAdvice logs, as warnings, what st's database settings do against the
// relay on the lanes' tables (store.Advisor), once when the store opens. A
// store without advice, or one that cannot read it, logs nothing more than
// a debug line: the relay works either way.
func logAdvice(ctx context.Context, st store.Store, lanes []config.Lane, log *slog.Logger) {
	a, ok := st.(store.Advisor)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, adviceTimeout)
	defer cancel()
	advice, err := a.Advice(ctx, laneTables(lanes))
	if err != nil {
		log.Debug("could not read the database's settings for advice", slog.String("error", err.Error()))
		return
	}
	for _, line := range advice {
		log.Warn(line)
	}
}

// laneTables is each lane table once, in the lanes' order.
func laneTables(lanes []config.Lane) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lanes {
		if !seen[l.Table] {
			seen[l.Table] = true
			out = append(out, l.Table)
		}
	}
	return out
}
