package keyed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func msg(key string) broker.Message {
	return broker.Message{Event: herald.Event{PartitionKey: key}}
}

func TestRunKeepsKeyOrderAndStopsKeyAfterFailure(t *testing.T) {
	msgs := []broker.Message{msg("a"), msg("b"), msg("a"), msg(""), msg("a"), msg("b")}
	var mu sync.Mutex
	var seen []int
	boom := errors.New("boom")
	res := Run(context.Background(), msgs, 4, func(_ context.Context, i int) broker.Result {
		mu.Lock()
		seen = append(seen, i)
		mu.Unlock()
		if i == 2 {
			return broker.Result{Err: boom}
		}
		return broker.Result{Receipt: storeReceipt(i)}
	})
	if len(res) != len(msgs) {
		t.Fatalf("got %d results for %d messages", len(res), len(msgs))
	}
	if !errors.Is(res[2].Err, boom) || !errors.Is(res[4].Err, ErrEarlierFailed) {
		t.Fatalf("key a: want boom then ErrEarlierFailed, got %v, %v", res[2].Err, res[4].Err)
	}
	for _, i := range []int{0, 1, 3, 5} {
		if res[i].Err != nil || res[i].Receipt.MessageID != string(rune('0'+i)) {
			t.Fatalf("result %d = %+v", i, res[i])
		}
	}
	pos := map[int]int{}
	for p, i := range seen {
		pos[i] = p
	}
	if _, sent := pos[4]; sent {
		t.Fatal("message 4 was sent after message 2 of its key failed")
	}
	if pos[0] > pos[2] || pos[1] > pos[5] {
		t.Fatalf("per-key order broken: send order %v", seen)
	}
}

func TestRunAfterContextDoneSendsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := Run(ctx, []broker.Message{msg("a"), msg("")}, 2, func(context.Context, int) broker.Result {
		t.Error("send called after the context was done")
		return broker.Result{}
	})
	for i, r := range res {
		if !errors.Is(r.Err, context.Canceled) || herald.IsPermanent(r.Err) {
			t.Fatalf("result %d: want a retryable context error, got %v", i, r.Err)
		}
	}
}

func TestGroups(t *testing.T) {
	got := Groups([]broker.Message{msg("x"), msg(""), msg("y"), msg("x"), msg("")})
	want := [][]int{{0, 3}, {1}, {2}, {4}}
	if len(got) != len(want) {
		t.Fatalf("Groups = %v, want %v", got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("Groups = %v, want %v", got, want)
		}
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("Groups = %v, want %v", got, want)
			}
		}
	}
}

func storeReceipt(i int) herald.Receipt { return herald.Receipt{MessageID: string(rune('0' + i))} }

func TestSendInOrderHoldsBackAFailedKey(t *testing.T) {
	msgs := []broker.Message{msg("a"), msg("a"), msg("b"), msg(""), msg("")}
	boom := errors.New("boom")
	var sent []int
	results := make([]broker.Result, len(msgs))
	SendInOrder(msgs, results, func(i int) error {
		sent = append(sent, i)
		if i == 0 || i == 3 {
			return boom
		}
		return nil
	})
	if fmt.Sprint(sent) != "[0 2 3 4]" {
		t.Fatalf("sent %v, want [0 2 3 4]: the second a held back, keyless messages independent", sent)
	}
	if !errors.Is(results[0].Err, boom) || !errors.Is(results[1].Err, ErrEarlierFailed) || results[2].Err != nil ||
		!errors.Is(results[3].Err, boom) || results[4].Err != nil {
		t.Fatalf("results %+v", results)
	}
}
