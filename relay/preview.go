package relay

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// Previewed is one message a lane would publish next, as the relay builds
// it, and the error that would keep it from being published (the row then
// goes dead unpublished, or is discarded as too old); nil when it would be
// sent.
type Previewed struct {
	Message broker.Message
	Err     error
}

// Preview returns the messages of up to limit rows that the lane's next
// claims would take, built as the relay builds them (destination, headers,
// body, the pre-publish check with the broker's payload limit
// maxPayload, 0 for none), without claiming or changing a row: s must be a
// store.Previewer. The lane needs no Publisher.
func Preview(ctx context.Context, s store.Store, l Lane, maxPayload, limit int) ([]Previewed, error) {
	pv, ok := s.(store.Previewer)
	if !ok {
		return nil, store.ErrNoPreview
	}
	l = l.WithDefaults()
	if err := store.MapTable(s, l.Table, l.Mapping()); err != nil {
		return nil, err
	}
	recs, err := pv.Preview(ctx, l.Scope(), limit)
	if err != nil {
		return nil, err
	}
	w := &worker{lane: l, maxPayload: maxPayload}
	out := make([]Previewed, len(recs))
	for i, rec := range recs {
		out[i] = Previewed{Message: message(l, rec), Err: w.check(rec)}
		if l.DiscardAfter > 0 && rec.Age > l.DiscardAfter {
			out[i].Err = fmt.Errorf("older than discard_after %s: deleted unpublished", l.DiscardAfter)
		}
	}
	return out, nil
}
