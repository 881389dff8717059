// Package keyed runs a batch of broker sends with per-partition-key order:
// messages of one key go one after another in the order given, different
// keys run concurrently up to a limit. Adapters whose SDK sends one message
// at a time (webhooks, RocketMQ SendSync) share it so that every one keeps
// the same ordering rule.
package keyed

import (
	"context"
	"fmt"
	"sync"

	"github.com/heraldhq/herald/broker"
)

// ErrEarlierFailed is the error of a message that was not sent because an
// earlier message of its partition key in the same batch failed: sending it
// would let it overtake the retry of the failed one. It is retryable.
// It wraps broker.ErrHeldBack: it says nothing about the broker.
var ErrEarlierFailed = fmt.Errorf("%w: an earlier message of the same partition key failed in this batch", broker.ErrHeldBack)

// Send publishes msgs[i] and returns its result.
type Send func(ctx context.Context, i int) broker.Result

// Run sends every message and returns one result per message, in order.
// Messages of one non-empty partition key run sequentially in the order
// given, and after a failure the rest of that key fail with ErrEarlierFailed;
// messages without a key are independent. At most parallel sends run at
// once (values below 1 mean 1). A message whose turn comes after ctx is done
// is not sent and gets ctx's error, which is retryable: nothing left.
func Run(ctx context.Context, msgs []broker.Message, parallel int, send Send) []broker.Result {
	results := make([]broker.Result, len(msgs))
	groups := Groups(msgs)
	if parallel < 1 {
		parallel = 1
	}
	if parallel > len(groups) {
		parallel = len(groups)
	}
	work := make(chan []int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range work {
				runGroup(ctx, g, results, send)
			}
		}()
	}
	for _, g := range groups {
		work <- g
	}
	close(work)
	wg.Wait()
	return results
}

// runGroup sends one key's messages in order; each index is written by
// exactly one goroutine, so results needs no lock.
func runGroup(ctx context.Context, group []int, results []broker.Result, send Send) {
	failed := false
	for _, i := range group {
		switch {
		case failed:
			results[i] = broker.Result{Err: ErrEarlierFailed}
		case ctx.Err() != nil:
			results[i] = broker.Result{Err: fmt.Errorf("not sent: %w", context.Cause(ctx))}
		default:
			results[i] = send(ctx, i)
		}
		if results[i].Err != nil {
			failed = true
		}
	}
}

// Groups splits msgs into sequences of indexes that must run in order: one
// per non-empty partition key (in order of first appearance) and one per
// message without a key.
func Groups(msgs []broker.Message) [][]int {
	var groups [][]int
	byKey := make(map[string]int)
	for i, m := range msgs {
		k := m.Event.PartitionKey
		if k == "" {
			groups = append(groups, []int{i})
			continue
		}
		g, ok := byKey[k]
		if !ok {
			g = len(groups)
			byKey[k] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// SendInOrder hands msgs to send one by one, in order, for adapters that
// send a whole batch before they wait for the answers: after send fails
// for a message of a key, the later messages of that key are not handed
// over and get ErrEarlierFailed. Each error goes into results.
func SendInOrder(msgs []broker.Message, results []broker.Result, send func(i int) error) {
	failed := map[string]bool{}
	for i, m := range msgs {
		key := m.Event.PartitionKey
		if key != "" && failed[key] {
			results[i].Err = ErrEarlierFailed
			continue
		}
		if results[i].Err = send(i); results[i].Err != nil && key != "" {
			failed[key] = true
		}
	}
}
