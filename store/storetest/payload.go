package storetest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/heraldhq/herald"
)

var payloadTests = []test{
	{"OneMiB", testPayloadOneMiB},
	{"TooLarge", testPayloadTooLarge},
}

func testPayloadOneMiB(t *testing.T, h *harness) {
	ev := event("Big")
	ev.Payload = bytes.Repeat([]byte("0123456789abcdef"), herald.DefaultMaxPayload/16)
	h.enqueue(ev)
	recs := h.claim(newClaimer("w"), 1)
	if len(recs) != 1 || !bytes.Equal(recs[0].Event.Payload, ev.Payload) {
		errorf(t, "a 1 MiB payload round-trips", "claimed %d rows", len(recs))
	}
}

func testPayloadTooLarge(t *testing.T, h *harness) {
	ob, err := herald.NewOutbox(herald.OutboxConfig{Dialect: h.s.Dialect(), Table: h.table, MaxPayload: 1024})
	if err != nil {
		t.Fatal(err)
	}
	ok, big := event("Small"), event("Big")
	big.Payload = make([]byte, 1025)
	tx, err := h.s.DB().BeginTx(h.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Enqueue(h.ctx, tx, ok, big); !errors.Is(err, herald.ErrPayloadTooLarge) {
		errorf(t, "a payload over MaxPayload is ErrPayloadTooLarge", "err %v", err)
	}
	// Commit anyway: Enqueue itself must have written nothing.
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	h.notFound("a batch with a too large payload writes nothing", ok.ID)
	h.notFound("a batch with a too large payload writes nothing", big.ID)
}
