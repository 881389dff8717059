package bench

import (
	"testing"

	"github.com/heraldhq/herald/relay"
)

// Rule: the delivered counter is done once its count is reached, even by a
// pass that delivers more than was missing, and later passes do not close
// it again. Before, a first pass of 999 against a count of 1 (a log lane's
// warm-up reading rows left in the log) never finished the warm-up.
func TestDeliveredCounterPassesItsCount(t *testing.T) {
	c := newDeliveredCounter(1)
	c.BatchDone(relay.BatchStats{Delivered: 999})
	select {
	case <-c.done:
	default:
		t.Fatal("a pass of 999 against a count of 1 left the counter open")
	}
	c.BatchDone(relay.BatchStats{Delivered: 5}) // must not close it again (a panic)
}
