package verify

import (
	"context"
	"math/rand/v2"
	"os"
	"time"

	"github.com/heraldhq/herald/store"
)

// relayDrop is the test-only hook HERALD_VERIFY_TEST_BREAK=relay-drop: a
// relay of verify's own, racing its children, that claims one committed
// row as a relay does and marks it delivered without publishing it. The
// outbox then says delivered for an event the broker never got: the loss
// a broken relay would cause, which the read-back must report.
func (v *verification) relayDrop(ctx context.Context) (stop func()) {
	if os.Getenv(breakEnv) != "relay-drop" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil && !v.dropOne(ctx) {
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// dropOne claims one row and marks it delivered unpublished; false when
// there was none to claim.
func (v *verification) dropOne(ctx context.Context) bool {
	token := rand.Int64()
	recs, err := v.rt.Store.Claim(ctx, store.ClaimParams{Scope: v.scratch.Scope(), Owner: "verify/relay-drop",
		Token: token, Lease: v.scratch.Lease, Limit: 1, Ordered: v.scratch.Ordering == "key"})
	if err != nil || len(recs) == 0 {
		return false
	}
	lost, err := v.rt.Store.Complete(ctx, store.Fence{Table: v.scratch.Table, Token: token}, []store.Delivery{{ID: recs[0].ID}})
	return err == nil && len(lost) == 0
}
