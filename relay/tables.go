package relay

import (
	"context"
	"errors"
	"time"

	"github.com/heraldhq/herald/store"
)

// tableCheckTimeout bounds the look at a lane's table after a failed
// claim, so a database that hangs does not hold the claim loop longer.
const tableCheckTimeout = 5 * time.Second

// claimFailed tells health why a claim failed: the lane's table is not as
// this build reads it (dropped, lacking a column, behind the migrations),
// or else the database is unreachable. Health logs each once per outage,
// not once per claim.
func (w *worker) claimFailed(ctx context.Context, err error) {
	if tableErr := w.tableProblem(ctx, err); tableErr != nil {
		w.health.tableFailed(w.lane.Name, tableErr)
		return
	}
	w.health.storeFailed(err)
}

// tableProblem returns why the lane's table cannot be read as this build
// reads it, when that is why claimErr happened: the error says so itself,
// or the store's CheckTable finds the table wanting. nil means the
// database is the problem.
func (w *worker) tableProblem(ctx context.Context, claimErr error) error {
	if errors.Is(claimErr, store.ErrSchema) || errors.Is(claimErr, store.ErrMissingIndex) {
		return claimErr
	}
	ctx, cancel := context.WithTimeout(ctx, tableCheckTimeout)
	defer cancel()
	if err := w.store.CheckTable(ctx, w.lane.Table); errors.Is(err, store.ErrSchema) {
		return err
	}
	return nil
}
