package verify

import (
	"context"
	"sync"
	"time"

	"github.com/heraldhq/herald/internal/terminal"
	"github.com/heraldhq/herald/store"
)

// execute runs the verification: consumer, relays, producers and faults,
// then the drain and the reconciliation. An ended ctx (Ctrl-C) stops it
// where it is, and the report says what was found so far.
func (v *verification) execute(ctx context.Context) *report {
	led := newLedger()
	rep := &report{Lane: v.lane.Name, Table: v.scratch.Table, Destination: v.tgt.describe(),
		Ordering: string(v.lane.Ordering), Faults: v.faults, Notes: v.notes}
	sub, err := v.tgt.subscribe(ctx)
	if err != nil {
		return rep.abort("open the consumer: " + err.Error())
	}
	defer sub.Close()
	readCtx, stopReading := context.WithCancel(context.Background())
	var reading sync.WaitGroup
	var readErrs int
	startReading := func() {
		reading.Add(1)
		go func() { defer reading.Done(); consume(readCtx, sub, led, &readErrs) }()
	}
	if !v.o.ReadLate {
		startReading()
	}
	defer func() { stopReading(); reading.Wait() }()

	if err := v.relays.keep(v.o.Relays); err != nil {
		return rep.abort(err.Error())
	}
	if !v.relays.waitReady(30 * time.Second) {
		rep.Notes = append(rep.Notes, "the relays did not all say they relay within 30s; the latency includes their start")
	}
	in := &injector{v: v, began: time.Now()}
	stopProgress := v.progress(led, in)
	stopDrop := v.relayDrop(ctx)
	rep.ProducerErrors, rep.ProducerError = v.produce(ctx, led, in)
	stopDrop()
	if ctx.Err() == nil {
		// Killed relays replaced and frozen ones thawed for the drain.
		if err := v.relays.keep(v.o.Relays); err != nil {
			rep.Notes = append(rep.Notes, "restart relays: "+err.Error())
		}
	}
	rep.Injected = in.wait()
	if v.o.ReadLate {
		// After the faults and restarts: what is read is what the broker kept.
		startReading()
	}
	v.drain(ctx, led)
	stats := v.settle(ctx, led)
	stopProgress()
	v.relays.stop(10 * time.Second)
	// A last moment for copies still on their way (duplicates).
	time.Sleep(500 * time.Millisecond)
	stopReading()
	reading.Wait()
	rep.Relays = v.relays.count()
	rep.ReadErrors = readErrs
	rep.reconcile(led, stats, v.lane.Ordering == "key", ctx.Err() != nil, v.projName(), v.readProjection(ctx))
	if v.o.ReadLate {
		rep.Throughput, rep.LatencyP50, rep.LatencyP99, rep.LatencyMax = 0, 0, 0, 0
		rep.Notes = append(rep.Notes, "--read-late: read back after the faults, so no throughput or latency figures")
	}
	return rep
}

// produce runs the producers and the faults over the window.
// It returns the producers' failed transactions and the last error.
func (v *verification) produce(ctx context.Context, led *ledger, in *injector) (int, string) {
	outbox, err := v.rt.Outbox(&v.scratch)
	if err != nil {
		return 1, err.Error()
	}
	var wg sync.WaitGroup
	faultCtx, stopFaults := context.WithCancel(ctx)
	defer stopFaults()
	wg.Add(1)
	go func() { defer wg.Done(); in.run(faultCtx) }()
	var pw sync.WaitGroup
	ps := make([]*producer, producers)
	for n := range producers {
		share := v.o.Events / producers
		if n < v.o.Events%producers {
			share++
		}
		p := &producer{n: n, db: v.rt.Store.DB(), outbox: outbox, lane: v.scratch, led: led, seq: map[string]int{}}
		ps[n] = p
		pw.Add(1)
		go func() { defer pw.Done(); p.produce(ctx, share, v.o.Duration) }()
	}
	pw.Wait()
	errs, last := 0, ""
	for _, p := range ps {
		errs += p.errs
		if p.lastErr != nil {
			last = p.lastErr.Error()
		}
	}
	// The faults run to the end of the window even when producers finish early.
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(in.began.Add(v.o.Duration))):
	}
	stopFaults()
	wg.Wait()
	return errs, last
}

// drainTime bounds the wait for the last events: three leases (a frozen
// relay's claims expire, are claimed again, published) and 30s, and
// another 90s for a projection that reads the broker: the messages a
// killed, frozen or cut-off projector held come again only once the
// broker's ack wait ends (NATS: 1m; Kafka: the group's session timeout).
func (v *verification) drainTime() time.Duration {
	if v.o.Drain > 0 {
		return v.o.Drain
	}
	d := 3*v.scratch.Lease + 30*time.Second
	if v.proj != nil && v.proj.p.Source.Broker != "" {
		d += brokerRedelivery
	}
	return d
}

// brokerRedelivery bounds how long a broker takes to hand a dead
// consumer's unacked messages to another (see drainTime).
const brokerRedelivery = 90 * time.Second

// drain waits until every committed event was read back, or the drain
// time ends.
func (v *verification) drain(ctx context.Context, led *ledger) {
	deadline := time.Now().Add(v.drainTime())
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if c, r := led.progress(); r >= c && v.projectedAll(ctx, c) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// settle reads the scratch table's states once the reading is done; rows
// still in flight get one lease more to be taken over and delivered.
func (v *verification) settle(ctx context.Context, led *ledger) store.LaneStats {
	scope := v.scratch.Scope()
	st, err := v.rt.Store.Stats(context.WithoutCancel(ctx), scope)
	if err != nil || st.InFlight == 0 || ctx.Err() != nil {
		return st
	}
	select {
	case <-ctx.Done():
	case <-time.After(v.scratch.Lease + time.Second):
	}
	v.drain(ctx, led)
	if st2, err := v.rt.Store.Stats(context.WithoutCancel(ctx), scope); err == nil {
		return st2
	}
	return st
}

// progress shows how the run goes on stderr until stopped: a line
// redrawn in place on a terminal, a line every two seconds elsewhere.
func (v *verification) progress(led *ledger, in *injector) func() {
	tty, every := terminal.Is(v.stderr), logEvery
	if tty {
		every = terminalEvery
	}
	return showProgress(v.stderr, tty, every, func() progressState {
		c, r := led.progress()
		done, current := in.status()
		return progressState{Elapsed: time.Since(in.began), Window: v.o.Duration, Written: led.written(), Events: v.o.Events,
			Committed: c, ReadBack: r, FaultsDone: done, Faults: len(v.faults), Fault: current, Relays: len(v.relays.alive())}
	})
}
