package awsmsg

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/awsconf"
	"github.com/heraldhq/herald/broker/internal/keyed"
)

// Batching is how batch calls (SendMessageBatch, PublishBatch) are cut.
type Batching struct {
	// Entries is the most messages one call carries (10 for SQS and SNS).
	Entries int
	// Bytes is the most bytes one call carries (the sum of Sizes).
	Bytes int
	// Parallel is how many calls run at once; each partition key's
	// messages stay in one sequence of calls, in order.
	Parallel int
}

// SendFunc sends msgs[idx...], all to one destination, in one call, and
// returns their results in the order of idx.
type SendFunc func(ctx context.Context, dest string, idx []int) []broker.Result

// Send publishes msgs in batch calls and fills results. A result that
// already holds an error (the message was refused before sending) stays,
// and holds back the later messages of its destination and partition key,
// as does a message that fails in a call: sending them would let them
// overtake its retry. sizes[i] is message i's size as the service counts
// it. Messages without a key are independent.
func Send(ctx context.Context, msgs []broker.Message, sizes []int, results []broker.Result, b Batching, send SendFunc) {
	seqs := sequences(msgs, max(b.Parallel, 1))
	var wg sync.WaitGroup
	for _, seq := range seqs {
		if len(seq) == 0 {
			continue
		}
		wg.Go(func() { sendSequence(ctx, msgs, sizes, results, b, seq, send) })
	}
	wg.Wait()
}

// sequences spreads the messages over n sequences: all messages of one
// destination and key in one, in order; messages without a key round robin.
func sequences(msgs []broker.Message, n int) [][]int {
	seqs := make([][]int, n)
	next := 0
	for i, m := range msgs {
		s := next % n
		if m.Event.PartitionKey == "" {
			next++
		} else {
			h := fnv.New32a()
			h.Write([]byte(m.Destination))
			h.Write([]byte{0})
			h.Write([]byte(m.Event.PartitionKey))
			s = int(h.Sum32() % uint32(n))
		}
		seqs[s] = append(seqs[s], i)
	}
	return seqs
}

// orderKey is what order is kept by: a destination and a partition key.
type orderKey struct{ dest, key string }

// sendSequence sends one sequence's messages in calls of up to b.Entries
// messages and b.Bytes bytes to one destination each.
func sendSequence(ctx context.Context, msgs []broker.Message, sizes []int, results []broker.Result, b Batching,
	seq []int, send SendFunc) {
	failed := map[orderKey]bool{}
	for len(seq) > 0 {
		if ctx.Err() != nil {
			for _, i := range seq {
				if results[i].Err == nil {
					results[i].Err = fmt.Errorf("not sent: %w", context.Cause(ctx))
				}
			}
			return
		}
		var call []int
		call, seq = nextCall(msgs, sizes, results, b, seq, failed)
		if len(call) == 0 {
			continue
		}
		for j, r := range send(ctx, msgs[call[0]].Destination, call) {
			i := call[j]
			results[i] = r
			if r.Err != nil && msgs[i].Event.PartitionKey != "" {
				failed[orderKey{msgs[i].Destination, msgs[i].Event.PartitionKey}] = true
			}
		}
	}
}

// nextCall takes the next call's messages from seq and returns them and
// what is left. Messages already failed are settled on the way (and fail
// their key); a key one of whose messages does not fit is left whole for
// a later call, so that none of its messages overtakes another.
func nextCall(msgs []broker.Message, sizes []int, results []broker.Result, b Batching, seq []int,
	failed map[orderKey]bool) (call, rest []int) {
	deferred := map[orderKey]bool{}
	bytes := 0
	dest := ""
	for _, i := range seq {
		m := msgs[i]
		k := orderKey{m.Destination, m.Event.PartitionKey}
		hasKey := m.Event.PartitionKey != ""
		switch {
		case hasKey && failed[k]:
			results[i].Err = keyed.ErrEarlierFailed
			continue
		case results[i].Err != nil:
			if hasKey {
				failed[k] = true
			}
			continue
		case hasKey && deferred[k]:
			rest = append(rest, i)
			continue
		}
		if len(call) == 0 {
			dest = m.Destination
		}
		if m.Destination != dest || len(call) == b.Entries || (len(call) > 0 && bytes+sizes[i] > b.Bytes) {
			rest = append(rest, i)
			if hasKey {
				deferred[k] = true
			}
			continue
		}
		call = append(call, i)
		bytes += sizes[i]
	}
	return call, rest
}

// Answer is one entry's answer in a batch call: its id (the entry's index
// in the call), and the service's message id or error code and text.
type Answer struct {
	ID        string
	MessageID string
	Code      string
	Text      string
}

// Results maps a batch call to one result per message: err (the call's
// own error) for all, else each entry's answer, an entry the service did
// not answer being ambiguous. eventIDs are the call's events, in order.
func Results(service, dest string, eventIDs []string, err error, answers []Answer) []broker.Result {
	res := make([]broker.Result, len(eventIDs))
	if err != nil {
		err = fmt.Errorf("%s: send to %s: %w", service, dest, awsconf.Request(err))
		for j := range res {
			res[j].Err = err
		}
		return res
	}
	answered := make([]bool, len(eventIDs))
	for _, a := range answers {
		j, perr := strconv.Atoi(a.ID)
		if perr != nil || j < 0 || j >= len(res) {
			continue
		}
		answered[j] = true
		if a.Code == "" {
			res[j].Receipt = herald.Receipt{MessageID: a.MessageID}
			continue
		}
		res[j].Err = awsconf.Wrap(awsconf.CodeKind(a.Code, a.Text),
			fmt.Errorf("%s: event %s refused by %s: %s: %s", service, eventIDs[j], dest, a.Code, a.Text))
	}
	for j, ok := range answered {
		if !ok {
			res[j].Err = herald.Ambiguous(fmt.Errorf("%s: event %s: the batch call answered nothing for it", service, eventIDs[j]))
		}
	}
	return res
}
