package projector

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/backoff"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/internal/sleep"
	"github.com/heraldhq/herald/store"
)

// maxWait caps one wait for a busy or not-yet-due row, so a shutdown or a
// replay is noticed between waits.
const maxWait = time.Second

// handle applies one message and settles it: ack once the event is done or
// dead (applied now, before, or given up on), nack when ctx ends first. A
// failing event is retried here, in its shard, until it is done or dead: that
// keeps one key's events in order, and a dead event no longer holds anything.
func (p *Projector) handle(ctx context.Context, m broker.Received) {
	ev := m.Event
	key := store.ProjectionKey{Table: p.cfg.Table, Projection: p.cfg.Name, Tenant: ev.Tenant, EventID: ev.ID}
	if ev.ID == "" {
		// Without an id there is no dedupe key; it cannot be applied
		// exactly once, so it is refused loudly and settled.
		p.cfg.Logger.Error("projector: message without an event id dropped", "projection", p.cfg.Name, "type", ev.Type)
		p.ack(m)
		return
	}
	storeErrs := backoff.Series{Policy: pauseAfterError}
	for {
		res, err := p.cfg.Store.Apply(ctx, store.ApplyParams{ProjectionKey: key, Lease: p.cfg.Lease},
			func(tx *sql.Tx) error { return p.call(ctx, tx, ev) })
		switch {
		case err == nil && (res.Outcome == store.Applied || res.Outcome == store.Finished):
			if res.Outcome == store.Applied {
				p.cfg.Observer.ProjectionApplied(p.cfg.Name, 1)
			}
			p.ack(m)
			return
		case err == nil:
			// NotDue or Busy: the row says when to look again.
			sleep.For(ctx, min(res.Wait, maxWait))
		case errors.Is(err, store.ErrHandler) && ctx.Err() == nil:
			if p.fail(ctx, key, ev, res.Attempts, err) {
				p.ack(m)
				return
			}
		default:
			// The store is unreachable, or ctx ended mid-apply (rolled back).
			if ctx.Err() == nil {
				p.cfg.Logger.Warn("projector: apply failed", "projection", p.cfg.Name, "event_id", ev.ID, "err", err)
			}
			sleep.For(ctx, storeErrs.Next())
		}
		if ctx.Err() != nil {
			settle(m.Nack)
			return
		}
	}
}

// handleBatch applies messages in one transaction and settles those done.
// The rest (a handler failure and everything after it, rows not due or
// busy, or the whole batch when the store failed) go through handle one by
// one, in order, which retries them as usual: one key's events stay in order.
func (p *Projector) handleBatch(ctx context.Context, jobs []job) {
	msgs := make([]broker.Received, len(jobs))
	ps := make([]store.ApplyParams, len(jobs))
	for i, j := range jobs {
		m := j.Received
		msgs[i] = m
		ps[i] = store.ApplyParams{Lease: p.cfg.Lease, ProjectionKey: store.ProjectionKey{Table: p.cfg.Table,
			Projection: p.cfg.Name, Tenant: m.Event.Tenant, EventID: m.Event.ID}}
	}
	res, err := p.applyBatch(ctx, ps, msgs, jobs)
	if err != nil {
		// Nothing committed (or ctx ended): each message on its own.
		res = make([]store.ApplyResult, len(msgs))
	}
	applied := 0
	for _, r := range res {
		if r.Outcome == store.Applied {
			applied++
		}
	}
	if applied > 0 {
		p.cfg.Observer.ProjectionApplied(p.cfg.Name, applied)
	}
	for i, m := range msgs {
		switch r := res[i]; {
		case m.Event.ID == "":
			p.handle(ctx, m) // refused there, loudly
		case r.Outcome == store.Applied || r.Outcome == store.Finished:
			p.ack(m)
		case r.Outcome == store.HandlerFailed && ctx.Err() == nil:
			if p.fail(ctx, ps[i].ProjectionKey, m.Event, r.Attempts, r.Err) {
				p.ack(m)
				continue
			}
			p.handle(ctx, m)
		default:
			p.handle(ctx, m)
		}
	}
}

// applyBatch applies msgs (the messages of jobs) through the store: from
// their statements (made when routed, else now), in lock order (lockOrder
// permutes msgs and ps), when the projection gives them and the store
// sends them at once; else through the handler.
func (p *Projector) applyBatch(ctx context.Context, ps []store.ApplyParams, msgs []broker.Received, jobs []job) ([]store.ApplyResult, error) {
	sa, ok := p.cfg.Store.(store.StatementApplier)
	if !ok || p.cfg.Statements == nil {
		return p.cfg.Store.ApplyBatch(ctx, ps, func(tx *sql.Tx, i int) error { return p.call(ctx, tx, msgs[i].Event) })
	}
	stmts, errs := make([][]store.Stmt, len(msgs)), make([]error, len(msgs))
	for i, j := range jobs {
		stmts[i], errs[i] = j.stmts, j.err
		if !j.made {
			stmts[i], errs[i] = p.statements(j.Event)
		}
	}
	lockOrder(msgs, ps, stmts, errs)
	return sa.ApplyStatements(ctx, ps, func(i int) ([]store.Stmt, error) { return stmts[i], errs[i] })
}

// statements runs Config.Statements, turning a panic into an error as call
// does for the handler.
func (p *Projector) statements(ev herald.Event) (ss []store.Stmt, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panic: %v\n%s", r, debug.Stack())
		}
	}()
	return p.cfg.Statements(ev)
}

// fail records a handler failure and reports whether the event is now dead
// (settled for good). Otherwise it waits out the backoff before returning.
func (p *Projector) fail(ctx context.Context, key store.ProjectionKey, ev herald.Event, attempts int, herr error) bool {
	retryIn := p.cfg.Backoff.Delay(attempts + 1)
	state, n, err := p.cfg.Store.Fail(ctx, store.ProjectionFailure{
		ProjectionKey: key, Error: herr.Error(), RetryIn: retryIn, MaxAttempts: p.cfg.MaxAttempts,
		Permanent: herald.IsPermanent(herr), Event: ev,
	})
	if err == nil && state != store.ProjectionDone {
		p.cfg.Observer.ProjectionFailed(p.cfg.Name, state == store.ProjectionDead)
	}
	switch {
	case err != nil:
		p.cfg.Logger.Warn("projector: recording a failure failed", "projection", p.cfg.Name, "event_id", ev.ID, "err", err)
		sleep.For(ctx, retryIn)
		return false
	case state == store.ProjectionDead:
		p.cfg.Logger.Error("projector: event is dead", "projection", p.cfg.Name, "event_id", ev.ID,
			"type", ev.Type, "attempts", n, "err", herr)
		return true
	case state == store.ProjectionDone:
		return true
	}
	p.cfg.Logger.Warn("projector: handler failed, will retry", "projection", p.cfg.Name, "event_id", ev.ID,
		"attempts", n, "retry_in", retryIn, "err", herr)
	sleep.For(ctx, retryIn)
	return false
}

// call runs the handler, turning a panic into an error so that one bad
// event cannot take the process down.
func (p *Projector) call(ctx context.Context, tx *sql.Tx, ev herald.Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panic: %v\n%s", r, debug.Stack())
		}
	}()
	return p.cfg.Handler(ctx, tx, ev)
}

func (p *Projector) ack(m broker.Received) {
	if err := settle(m.Ack); err != nil {
		// Applied but not acked: the broker redelivers it and the
		// projection table answers "done". Nothing is applied twice.
		p.cfg.Logger.Warn("projector: ack failed", "projection", p.cfg.Name, "event_id", m.Event.ID, "err", err)
	}
}

func (p *Projector) resetHook(ctx context.Context) func(tx *sql.Tx) error {
	if p.cfg.Reset == nil {
		return nil
	}
	return func(tx *sql.Tx) error { return p.cfg.Reset(ctx, tx) }
}
