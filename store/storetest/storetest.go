// Package storetest is the conformance suite every store.Store passes: one
// Run for the behaviour, one Bench for the hot path. A store's own test file
// calls both with a function that opens the store, and declares the
// optional abilities the store has (Features):
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(tb testing.TB) store.Store { … },
//			storetest.Features{Wakeups: true, LogLanes: true})
//	}
//
// open must return a new Store on the same database every time it is called
// within one Run (the suite opens two to act as two processes), and should
// register the store's Close with t.Cleanup. Each test makes its own table
// with a random name, so runs on a shared server do not collide.
//
// Every failure message starts with the rule it checks, in brackets.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// Opener opens a store on the suite's database; see the package doc.
type Opener func(tb testing.TB) store.Store

// Run runs the whole conformance suite against the stores open returns:
// what every store does, then a group per optional ability, run or
// skipped as f declares it (see Features).
func Run(t *testing.T, open Opener, f Features) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Enqueue", enqueueTests},
		{"Claim", claimTests},
		{"DueFor", dueForTests},
		{"Lease", leaseTests},
		{"Mark", markTests},
		{"Dead", deadTests},
		{"Maintenance", maintenanceTests},
		{"Ordered", orderedTests},
		{"Payload", payloadTests},
		{"Schema", schemaTests},
		{"Headers", headersTests},
		{"Unselected", unselectedTests},
		{"LaneState", laneStateTests},
		{"Replay", replayTests},
		{"Fair", fairTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, newHarness(t, open)) })
			}
		})
	}
	runFeatures(t, open, f)
}

// test is one named check of the suite.
type test struct {
	name string
	fn   func(t *testing.T, h *harness)
}

// harness is one test's store and table, with helpers that fail the test
// on unexpected errors.
type harness struct {
	t     *testing.T
	ctx   context.Context
	open  Opener
	s     store.Store
	table string
	ob    *herald.Outbox
}

func newHarness(t *testing.T, open Opener) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	s := open(t)
	table := randomName("herald_t")
	ob, err := herald.NewOutbox(herald.OutboxConfig{Dialect: s.Dialect(), Table: table})
	if err != nil {
		t.Fatalf("[outbox] NewOutbox: %v", err)
	}
	h := &harness{t: t, ctx: ctx, open: open, s: s, table: table, ob: ob}
	h.migrate(table)
	return h
}

// migrate makes table for every kind of claim: ordered, tenant, fair.
func (h *harness) migrate(table string) {
	h.t.Helper()
	if err := store.MigrateFor(h.ctx, h.s, table, store.TableUse{Ordered: true, Tenants: true}); err != nil {
		h.t.Fatalf("[migrate] MigrateFor(%s): %v", table, err)
	}
}

// randomName returns prefix_ and 12 random hex digits: a valid identifier.
func randomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

func (h *harness) scope() store.Scope { return store.Scope{Table: h.table} }

// event returns a valid event of type typ with a fresh id.
func event(typ string) herald.Event {
	return herald.Event{ID: herald.NewID(), Topic: "test", Type: typ, Payload: []byte(`{"n":1}`)}
}

// keyed returns n events of one partition key.
func keyed(key string, n int) []herald.Event {
	evs := make([]herald.Event, n)
	for i := range evs {
		evs[i] = event("Keyed")
		evs[i].PartitionKey = key
	}
	return evs
}

// enqueue commits events in one transaction.
func (h *harness) enqueue(evs ...herald.Event) {
	h.t.Helper()
	if err := h.tryEnqueue(h.ob, evs...); err != nil {
		h.t.Fatalf("[enqueue] %v", err)
	}
}

func (h *harness) tryEnqueue(ob *herald.Outbox, evs ...herald.Event) error {
	tx, err := h.s.DB().BeginTx(h.ctx, nil)
	if err != nil {
		return err
	}
	if err := ob.Enqueue(h.ctx, tx, evs...); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// claimer is one worker identity: an owner and a fencing token.
type claimer struct {
	owner string
	token int64
}

func newClaimer(name string) claimer {
	return claimer{owner: name, token: mrand.Int64()}
}

func (c claimer) fence(h *harness) store.Fence { return store.Fence{Table: h.table, Token: c.token} }

// claimWith claims with p filled in for c and the harness's table.
func (h *harness) claimWith(c claimer, p store.ClaimParams) []store.Record {
	h.t.Helper()
	p.Table = h.table
	p.Owner, p.Token = c.owner, c.token
	if p.Lease == 0 {
		p.Lease = time.Minute
	}
	if p.Limit == 0 {
		p.Limit = 100
	}
	recs, err := h.s.Claim(h.ctx, p)
	if err != nil {
		h.t.Fatalf("[claim] Claim: %v", err)
	}
	return recs
}

// claim claims up to limit rows of the whole table for c, with a long lease.
func (h *harness) claim(c claimer, limit int) []store.Record {
	h.t.Helper()
	return h.claimWith(c, store.ClaimParams{Limit: limit})
}

func (h *harness) complete(c claimer, recs ...store.Record) []int64 {
	h.t.Helper()
	ds := make([]store.Delivery, len(recs))
	for i, r := range recs {
		ds[i] = store.Delivery{ID: r.ID}
	}
	lost, err := h.s.Complete(h.ctx, c.fence(h), ds)
	if err != nil {
		h.t.Fatalf("[complete] Complete: %v", err)
	}
	return lost
}

func (h *harness) get(eventID string) store.Record {
	h.t.Helper()
	r, err := h.s.Get(h.ctx, h.table, eventID)
	if err != nil {
		h.t.Fatalf("[get] Get(%s): %v", eventID, err)
	}
	return r
}

func (h *harness) stats() store.LaneStats {
	h.t.Helper()
	st, err := h.s.Stats(h.ctx, h.scope())
	if err != nil {
		h.t.Fatalf("[stats] Stats: %v", err)
	}
	return st
}

func (h *harness) notFound(rule, eventID string) {
	h.t.Helper()
	_, err := h.s.Get(h.ctx, h.table, eventID)
	if !errors.Is(err, store.ErrNotFound) {
		h.t.Errorf("[%s] Get(%s) = %v, want store.ErrNotFound", rule, eventID, err)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, rule string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("[%s] still not true after %v", rule, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ids(recs []store.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

func eventIDs(recs []store.Record) map[string]bool {
	out := make(map[string]bool, len(recs))
	for _, r := range recs {
		out[r.Event.ID] = true
	}
	return out
}

// sameIDs reports whether a and b hold the same ids, in any order.
func sameIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	seen := make(map[int64]int, len(a))
	for _, id := range a {
		seen[id]++
	}
	for _, id := range b {
		seen[id]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func errorf(t *testing.T, rule, format string, args ...any) {
	t.Helper()
	t.Errorf("[%s] %s", rule, fmt.Sprintf(format, args...))
}
