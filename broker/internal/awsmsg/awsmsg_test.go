package awsmsg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

func message(key string, payload []byte, headers map[string]string) broker.Message {
	return broker.Message{Destination: "q", Attempt: 1, Event: herald.Event{ID: herald.NewID(), Topic: "t", Type: "T",
		PartitionKey: key, Payload: payload, Headers: headers}}
}

// Rule: what fits goes as attributes of its own; too many headers, a name
// SQS refuses or an empty value pack the user headers in one JSON
// attribute; a body that is not text goes base64; Decode undoes both.
func TestEncodeDecode(t *testing.T) {
	many := map[string]string{}
	for i := range 5 {
		many[fmt.Sprint("h", i)] = "v"
	}
	for name, tc := range map[string]struct {
		payload []byte
		headers map[string]string
		packed  bool
		base64  bool
	}{
		"plain":        {[]byte(`{"a":1}`), map[string]string{"traceparent": "00-x"}, false, false},
		"too many":     {[]byte("x"), many, true, false},
		"bad name":     {[]byte("x"), map[string]string{"aws.x": "v"}, true, false},
		"empty value":  {[]byte("x"), map[string]string{"x-empty": ""}, true, false},
		"binary body":  {[]byte("\x00\xff"), nil, false, true},
		"control char": {[]byte("a\x01b"), nil, false, true},
		"empty body":   {nil, nil, false, false},
	} {
		t.Run(name, func(t *testing.T) {
			m := message("k", tc.payload, tc.headers)
			out := Encode(m, "src")
			if _, ok := out.Attributes[PackedHeaders]; ok != tc.packed {
				t.Errorf("packed %v, want %v: %v", ok, tc.packed, out.Attributes)
			}
			if got := out.Attributes[BodyEncoding] == "base64"; got != tc.base64 {
				t.Errorf("base64 %v, want %v", got, tc.base64)
			}
			if len(out.Attributes) > MaxAttributes {
				t.Errorf("%d attributes, SQS takes %d", len(out.Attributes), MaxAttributes)
			}
			ev, err := Decode(out.Attributes, out.Body)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ev.Payload, tc.payload) || ev.ID != m.Event.ID || ev.PartitionKey != "k" || len(ev.Headers) != len(tc.headers) {
				t.Errorf("decoded %+v, want the event back", ev)
			}
			for k, v := range tc.headers {
				if ev.Headers[k] != v {
					t.Errorf("header %s = %q, want %q", k, ev.Headers[k], v)
				}
			}
		})
	}
}

// Rule: the size counted is the body's and each attribute's name, type
// and value; Prepare refuses over either limit, naming it, and a FIFO
// destination without a group.
func TestPrepare(t *testing.T) {
	m := message("", bytes.Repeat([]byte("x"), 100), nil)
	lim := Limits{Service: "sqs", MaxPayload: 100, MaxSize: 10_000, SizeName: "the queue's"}
	if _, err := Prepare(m, "s", lim); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	lim.MaxPayload = 99
	if _, err := Prepare(m, "s", lim); !errors.Is(err, herald.ErrPayloadTooLarge) || !strings.Contains(err.Error(), "99") {
		t.Errorf("over max_payload: %v", err)
	}
	lim.MaxPayload, lim.MaxSize = 100, 150
	if _, err := Prepare(m, "s", lim); !errors.Is(err, herald.ErrPayloadTooLarge) || !strings.Contains(err.Error(), "150") {
		t.Errorf("over the size with attributes: %v", err)
	}
	lim.MaxSize, lim.FIFO = 10_000, true
	if _, err := Prepare(m, "s", lim); !herald.IsPermanent(err) || !strings.Contains(err.Error(), "message_group_id") {
		t.Errorf("FIFO without a group: %v", err)
	}
	lim.DefaultGroup = "all"
	if o, err := Prepare(m, "s", lim); err != nil || o.Group != "all" || o.Dedup != m.Event.ID {
		t.Errorf("FIFO with a default group: %+v %v", o, err)
	}
	if id := FIFOID(strings.Repeat("é", 10)); !strings.HasPrefix(id, "sha256-") || FIFOID("ok-key_1") != "ok-key_1" {
		t.Errorf("FIFOID: %q", id)
	}
}

// Rule: Send cuts calls of at most Entries messages and Bytes bytes to one
// destination, keeps each key's messages in order in one sequence, and
// holds back a key's later messages after one fails, in later calls too.
func TestSendKeepsKeyOrderAndHoldsBack(t *testing.T) {
	var msgs []broker.Message
	for i := range 30 {
		m := message([]string{"a", "b", "c"}[i%3], []byte("x"), nil)
		m.Destination = []string{"q1", "q2"}[i%2]
		msgs = append(msgs, m)
	}
	sizes := make([]int, len(msgs))
	for i := range sizes {
		sizes[i] = 10
	}
	results := make([]broker.Result, len(msgs))
	results[3].Err = errors.New("refused before sending") // key a, q2
	var mu sync.Mutex
	var calls [][]int
	Send(context.Background(), msgs, sizes, results, Batching{Entries: 4, Bytes: 35, Parallel: 2},
		func(_ context.Context, dest string, idx []int) []broker.Result {
			mu.Lock()
			calls = append(calls, idx)
			mu.Unlock()
			res := make([]broker.Result, len(idx))
			for j, i := range idx {
				if msgs[i].Destination != dest {
					t.Errorf("message %d to %s in a call to %s", i, msgs[i].Destination, dest)
				}
				if i == 10 { // key b, q1: fails in its call
					res[j].Err = errors.New("refused")
				}
			}
			return res
		})
	for _, c := range calls {
		if len(c) > 3 { // 35 bytes: 3 messages of 10
			t.Errorf("call of %d messages, over the bytes", len(c))
		}
	}
	// A message in the same call as the one that failed was sent with it
	// (the service takes entries independently); later ones are held back.
	withTen := map[int]bool{}
	for _, c := range calls {
		for _, i := range c {
			if i == 10 {
				for _, j := range c {
					withTen[j] = true
				}
			}
		}
	}
	for i, m := range msgs {
		k := orderKey{m.Destination, m.Event.PartitionKey}
		heldA := k == orderKey{"q2", "a"} && i > 3
		heldB := k == orderKey{"q1", "b"} && i > 10 && !withTen[i]
		switch {
		case heldA || heldB:
			if !errors.Is(results[i].Err, broker.ErrHeldBack) {
				t.Errorf("message %d (%v): %v, want held back", i, k, results[i].Err)
			}
		case i == 3 || i == 10:
			if results[i].Err == nil {
				t.Errorf("message %d: the failure was lost", i)
			}
		case results[i].Err != nil:
			t.Errorf("message %d (%v): %v", i, k, results[i].Err)
		}
	}
	// Per destination and key, the messages sent went in index order.
	last := map[orderKey]int{}
	for _, c := range calls {
		for _, i := range c {
			k := orderKey{msgs[i].Destination, msgs[i].Event.PartitionKey}
			if prev, ok := last[k]; ok && prev > i {
				t.Errorf("%v: message %d sent after %d", k, i, prev)
			}
			last[k] = i
		}
	}
}
