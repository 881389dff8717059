package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func msg(id string) broker.Message {
	return broker.Message{
		Destination: "d",
		Event:       herald.Event{ID: id, Topic: "t", Type: "T", Payload: []byte(id)},
	}
}

func batch(ids ...string) []broker.Message {
	out := make([]broker.Message, len(ids))
	for i, id := range ids {
		out[i] = msg(id)
	}
	return out
}

func TestRecordsInOrderWithSequence(t *testing.T) {
	p := memory.New(memory.Config{})
	res := p.Publish(context.Background(), batch("a", "b", "c"))
	for i, r := range res {
		if r.Err != nil || r.Receipt.Sequence != uint64(i+1) || r.Receipt.Stream != "memory" {
			t.Fatalf("result %d = %+v, want sequence %d on stream memory", i, r, i+1)
		}
	}
	recs := p.Records()
	if len(recs) != 3 || recs[0].Message.Event.ID != "a" || recs[2].Message.Event.ID != "c" {
		t.Fatalf("records = %+v", recs)
	}
	if recs[0].Headers["ce-id"] != "a" || recs[0].Headers["ce-type"] != "T" {
		t.Fatalf("headers = %v", recs[0].Headers)
	}
	recs[0].Message.Event.ID = "changed"
	if p.Records()[0].Message.Event.ID != "a" {
		t.Fatal("Records returned shared storage, want a copy")
	}
}

func TestFailNthAndEvent(t *testing.T) {
	p := memory.New(memory.Config{})
	boom := errors.New("boom")
	p.FailNth(2, boom)
	p.FailEvent("c", 2, herald.Permanent(boom))
	res := p.Publish(context.Background(), batch("a", "b", "c"))
	if res[0].Err != nil || !errors.Is(res[1].Err, boom) || !herald.IsPermanent(res[2].Err) {
		t.Fatalf("results = %+v, want ok, boom, permanent", res)
	}
	res = p.Publish(context.Background(), batch("b", "c", "c"))
	if res[0].Err != nil || res[1].Err == nil || res[2].Err != nil {
		t.Fatalf("second results = %+v, want ok, fail (second of 2), ok", res)
	}
	if p.Attempts() != 6 || p.Distinct() != 3 || len(p.Records()) != 3 {
		t.Fatalf("attempts %d distinct %d records %d, want 6 3 3", p.Attempts(), p.Distinct(), len(p.Records()))
	}
}

func TestLoseAckStoresAndReportsAmbiguous(t *testing.T) {
	p := memory.New(memory.Config{})
	p.LoseAck("a", 1)
	res := p.Publish(context.Background(), batch("a"))
	if !herald.IsAmbiguous(res[0].Err) || p.Count("a") != 1 {
		t.Fatalf("result %v, count %d: want ambiguous and stored once", res[0].Err, p.Count("a"))
	}
	res = p.Publish(context.Background(), batch("a"))
	if res[0].Err != nil || p.Count("a") != 2 {
		t.Fatalf("retry: %v, count %d: want ok, stored twice", res[0].Err, p.Count("a"))
	}
}

func TestHookDownAndPayloadLimit(t *testing.T) {
	p := memory.New(memory.Config{MaxPayload: 3})
	p.SetHook(func(m broker.Message) error {
		if m.Event.ID == "x" {
			return fmt.Errorf("hook refuses x")
		}
		return nil
	})
	big := msg("big")
	big.Event.Payload = []byte("1234")
	res := p.Publish(context.Background(), []broker.Message{msg("x"), big, msg("y")})
	if res[0].Err == nil || res[2].Err != nil {
		t.Fatalf("results = %+v", res)
	}
	if !errors.Is(res[1].Err, herald.ErrPayloadTooLarge) || !herald.IsPermanent(res[1].Err) ||
		!strings.Contains(res[1].Err.Error(), "limit is 3") {
		t.Fatalf("oversize: %v, want a permanent ErrPayloadTooLarge naming the limit", res[1].Err)
	}
	outage := errors.New("down")
	p.SetDown(outage)
	if res := p.Publish(context.Background(), batch("z")); !errors.Is(res[0].Err, outage) {
		t.Fatalf("down: %v", res[0].Err)
	}
	p.SetDown(nil)
	if res := p.Publish(context.Background(), batch("z")); res[0].Err != nil {
		t.Fatalf("back up: %v", res[0].Err)
	}
	if p.MaxPayload() != 3 {
		t.Fatalf("MaxPayload = %d", p.MaxPayload())
	}
}

func TestDelayPastDeadlineIsAmbiguousButStored(t *testing.T) {
	p := memory.New(memory.Config{})
	p.SetDelay(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	res := p.Publish(ctx, batch("a", "b"))
	if !herald.IsAmbiguous(res[0].Err) || res[1].Err == nil || herald.IsAmbiguous(res[1].Err) {
		t.Fatalf("results = %+v, want ambiguous (stored, ack late) then not sent", res)
	}
	if p.Count("a") != 1 || p.Count("b") != 0 {
		t.Fatalf("counts a=%d b=%d, want 1 0", p.Count("a"), p.Count("b"))
	}
}

func TestWaitDistinctAndClose(t *testing.T) {
	p := memory.New(memory.Config{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { p.Publish(context.Background(), batch(fmt.Sprint(i))) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.WaitDistinct(ctx, 4); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	short, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	if err := p.WaitDistinct(short, 5); err == nil || !strings.Contains(err.Error(), "4 of 5") {
		t.Fatalf("WaitDistinct(5) = %v, want a deadline error saying 4 of 5", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if res := p.Publish(context.Background(), batch("late")); !errors.Is(res[0].Err, memory.ErrClosed) {
		t.Fatalf("after Close: %v", res[0].Err)
	}
}
