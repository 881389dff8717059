package projector

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// lockOrder reorders a batch whose statements are known by the arguments
// of each event's first statement (typically the read model's key comes
// first), so that concurrent batches lock shared read-model rows in one
// order. Batches of random keys that lock in arrival order deadlock each
// other, and on PostgreSQL each deadlock stalls its transactions, and all
// waiting behind them, for deadlock_timeout (1s by default): 8 workers
// upserting into 1,000 rows met about one a second. One key's events keep
// their order: each (tenant, partition key) sorts as its first event in
// the batch, and its events follow each other as received. Events without
// a partition key have no order to keep (they are spread over the workers
// by id). msgs, ps and stmts are permuted together.
func lockOrder(msgs []broker.Received, ps []store.ApplyParams, stmts [][]store.Stmt, errs []error) {
	lead := make([]int, len(msgs)) // the batch's first event of i's key
	first := map[string]int{}
	for i, m := range msgs {
		lead[i] = i
		if m.Event.PartitionKey == "" {
			continue
		}
		k := m.Event.Tenant + "\x00" + m.Event.PartitionKey
		if j, ok := first[k]; ok {
			lead[i] = j
		} else {
			first[k] = i
		}
	}
	order := make([]int, len(msgs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := compareArgs(firstArgs(stmts[lead[a]]), firstArgs(stmts[lead[b]])); c != 0 {
			return c
		}
		return cmp.Compare(lead[a], lead[b])
	})
	permute(msgs, order)
	permute(ps, order)
	permute(stmts, order)
	permute(errs, order)
}

func permute[T any](s []T, order []int) {
	old := slices.Clone(s)
	for i, j := range order {
		s[i] = old[j]
	}
}

func firstArgs(ss []store.Stmt) []any {
	if len(ss) == 0 {
		return nil
	}
	return ss[0].Args
}

// compareArgs orders argument lists element by element: any consistent
// total order does, as long as equal values compare equal.
func compareArgs(a, b []any) int {
	for i := range min(len(a), len(b)) {
		if c := compareArg(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func compareArg(a, b any) int {
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y)
		}
	case float64:
		if y, ok := b.(float64); ok {
			return cmp.Compare(x, y)
		}
	case string:
		if y, ok := b.(string); ok {
			return cmp.Compare(x, y)
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y)
		}
	}
	// Different or other types: by type, then by their text.
	if c := cmp.Compare(fmt.Sprintf("%T", a), fmt.Sprintf("%T", b)); c != 0 {
		return c
	}
	return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b))
}
