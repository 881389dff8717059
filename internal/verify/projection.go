package verify

import (
	"context"
	"fmt"
	"os"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/projection"
	"github.com/heraldhq/herald/store"
)

// projCheck is the scratch projection verify adds to its relays' config
// when the user's config has a projection reading the lane (from its
// broker or its outbox table): the same source kind and settings, its own
// name and ledger, and one statement that records each application in a
// scratch table, so that an event applied twice shows as two rows.
// The user's statements never run: they would write verify's events into
// the user's read model.
type projCheck struct {
	// user is the user's projection it copies (for the report).
	user string
	// p is the scratch projection.
	p projection.Projection
	// applied is the scratch table of applications.
	applied string
}

// lanesProjection returns the first projection of f that reads lane l:
// from its outbox table, or from its broker.
func lanesProjection(f *config.File, l config.Lane) (projection.Projection, bool) {
	for _, p := range f.Projections {
		reads := p.Source.Outbox == l.Table || (p.Source.Broker != "" && p.Source.Broker == l.Broker)
		if reads && p.Store == l.Store {
			return p, true
		}
	}
	return projection.Projection{}, false
}

// newProjCheck is the scratch copy of user reading the scratch table (an
// outbox source) or the scratch destination (a broker source).
func newProjCheck(user projection.Projection, table string, tgt target) *projCheck {
	p := user
	p.Name, p.Store, p.Table = table, "", table+"_ledger"
	p.IncludeTypes, p.ExcludeTypes = nil, nil
	if p.Source.Outbox != "" {
		p.Source = projection.Source{Outbox: table}
	} else {
		p.Source = projection.Source{Broker: "verify", Destination: tgt.destination().String(), Group: projectionGroup(table)}
	}
	applied := table + "_applied"
	p.Statements = []string{"INSERT INTO " + applied + " (event_id) VALUES (:event.id)"}
	return &projCheck{user: user.Name, p: p, applied: applied}
}

// projectionGroup is the scratch projection's consumer group: not the
// read-back's (on Kafka the scratch topic's name), which would split the
// partitions between them.
func projectionGroup(table string) string { return table + "_projection" }

// create makes the ledger (the migration herald run would) and the
// applications table, each registered for removal once it exists.
func (c *projCheck) create(ctx context.Context, v *verification) error {
	v.created = append(v.created, func(ctx context.Context) error { return v.rt.Store.Drop(ctx, c.p.Table) })
	if err := v.rt.Store.MigrateProjections(ctx, c.p.Table); err != nil {
		return fmt.Errorf("verify: create the scratch ledger %s: %w", c.p.Table, err)
	}
	v.created = append(v.created, func(ctx context.Context) error { return v.rt.Store.Drop(ctx, c.applied) })
	// One portable column: the same statement on every database.
	_, err := v.rt.Store.DB().ExecContext(ctx, "CREATE TABLE "+c.applied+" (event_id VARCHAR(64) NOT NULL)")
	if err != nil {
		return fmt.Errorf("verify: create the scratch table %s: %w", c.applied, err)
	}
	return nil
}

// done counts the ledger's done rows (the drain waits for them).
func (c *projCheck) done(ctx context.Context, s store.ProjectionStore) int64 {
	st, err := s.ProjectionStats(ctx, c.p.Table, c.p.Name)
	if err != nil || len(st) == 0 {
		return 0
	}
	return st[0].Done
}

// projResult is what the projection did, read at the end.
type projResult struct {
	// applied counts the applications of each event id.
	applied map[string]int
	stats   store.ProjectionStats
	err     error
}

// read reads the applications and the ledger's states.
func (c *projCheck) read(ctx context.Context, s store.Store) projResult {
	r := projResult{applied: map[string]int{}}
	if st, err := s.ProjectionStats(ctx, c.p.Table, c.p.Name); err != nil {
		r.err = err
	} else if len(st) > 0 {
		r.stats = st[0]
	}
	rows, err := s.DB().QueryContext(ctx, "SELECT event_id, COUNT(*) FROM "+c.applied+" GROUP BY event_id")
	if err != nil {
		r.err = err
		return r
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			r.err = err
			return r
		}
		r.applied[id] = n
	}
	if err := rows.Err(); err != nil {
		r.err = err
	}
	return r
}

// checkProjection is the projection's verdict.
const checkProjection = "projection applied exactly once"

// projectionVerdict compares the applications with what was sent: every
// committed event applied once, none rolled back or unwritten applied,
// and the ledger without failed, dead or processing rows. led.mu is held.
func (r *report) projectionVerdict(led *ledger, name string, pr *projResult) {
	if pr == nil {
		r.Verdicts = append(r.Verdicts, verdict{Check: checkProjection, Held: true, Skipped: true,
			Detail: "not asked: no projection of the config reads this lane"})
		return
	}
	var never, twice, stray []string
	once := 0
	for _, id := range led.order {
		n := pr.applied[id]
		switch s := led.sent[id]; {
		case s.outcome == committed && n == 0:
			never = append(never, id)
		case s.outcome == committed && n == 1:
			once++
		case s.outcome == committed && n > 1, s.outcome == ambiguous && n > 1:
			twice = append(twice, fmt.Sprintf("%s applied %d times", id, n))
		case s.outcome == rolledBack && n > 0:
			stray = append(stray, id+" rolled back, applied")
		}
	}
	for id := range pr.applied {
		if _, ok := led.sent[id]; !ok {
			stray = append(stray, id+" never written, applied")
		}
	}
	st := pr.stats
	held := len(never)+len(twice)+len(stray) == 0 && st.Failed+st.Dead+st.Processing == 0 && pr.err == nil
	detail := fmt.Sprintf("%s: %d applied once, %d never, %d more than once, %d not committed; ledger %d done, %d failed, %d dead, %d processing",
		name, once, len(never), len(twice), len(stray), st.Done, st.Failed, st.Dead, st.Processing)
	if pr.err != nil {
		detail += "; read: " + pr.err.Error()
	}
	r.ProjectionApplied, r.ProjectionTwice = once, len(twice)
	r.Verdicts = append(r.Verdicts, verdict{Check: checkProjection, Held: held, Detail: detail,
		Examples: firstN(append(append(twice, stray...), never...), 5)})
}

// projectedAll says whether the scratch projection (if any) has applied
// as many events as were committed.
func (v *verification) projectedAll(ctx context.Context, committedN int) bool {
	return v.proj == nil || v.proj.done(context.WithoutCancel(ctx), v.rt.Store) >= int64(committedN)
}

// projName names the user's projection the check copies ("" without).
func (v *verification) projName() string {
	if v.proj == nil {
		return ""
	}
	return "as " + v.proj.user
}

// readProjection reads the scratch projection's applications at the end
// (nil without one). The test-only hook "twice" first applies one event
// a second time, behind the projector's back.
func (v *verification) readProjection(ctx context.Context) *projResult {
	if v.proj == nil {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	if os.Getenv(breakEnv) == "twice" {
		_, _ = v.rt.Store.DB().ExecContext(ctx, "INSERT INTO "+v.proj.applied+" (event_id) SELECT event_id FROM "+v.proj.applied+" LIMIT 1")
	}
	r := v.proj.read(ctx, v.rt.Store)
	return &r
}
