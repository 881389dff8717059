package projector

import (
	"fmt"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// routed is a projector whose statements upsert the row named by the
// event's type (an INSERT, key first) and one that updates it (the key
// after the value SET).
func routed(sql string) *Projector {
	return &Projector{cfg: Config{Statements: func(ev herald.Event) ([]store.Stmt, error) {
		if ev.Type == "" {
			return nil, fmt.Errorf("no type")
		}
		args := []any{ev.Type, ev.ID}
		if sql[0] == 'U' {
			args = []any{int64(1), ev.Type}
		}
		return []store.Stmt{{SQL: sql, Args: args}}, nil
	}}}
}

// TestShardByReadModelRow sends one read-model row's events without a
// partition key to one worker, spreads different rows, and keeps a
// partition key's events together whatever rows they write.
func TestShardByReadModelRow(t *testing.T) {
	const workers = 8
	msg := func(id, row, key string) broker.Received {
		return broker.Received{Event: herald.Event{ID: id, Type: row, PartitionKey: key}}
	}
	for _, sql := range []string{" INSERT INTO m (k, n) VALUES ($1, $2)", "UPDATE m SET n = n + $1 WHERE k = $2"} {
		p := routed(sql)
		rows := map[int]bool{}
		for r := range 64 {
			row := fmt.Sprintf("row%d", r)
			first := p.shardOf(msg("a"+row, row, ""), workers)
			rows[first] = true
			for i := range 20 {
				if got := p.shardOf(msg(fmt.Sprintf("e%d-%s", i, row), row, ""), workers); got != first {
					t.Fatalf("%q: [row] events of %s went to workers %d and %d", sql, row, first, got)
				}
			}
		}
		if len(rows) < workers/2 {
			t.Fatalf("%q: [spread] 64 rows went to %d of %d workers", sql, len(rows), workers)
		}
		keyed := p.shardOf(msg("k1", "row1", "key"), workers)
		for r := range 64 {
			if got := p.shardOf(msg(fmt.Sprintf("k%d", r), fmt.Sprintf("row%d", r), "key"), workers); got != keyed {
				t.Fatalf("%q: [key order] events of one partition key went to workers %d and %d", sql, keyed, got)
			}
		}
	}
}

// TestShardByIDWithoutStatements spreads events by id when the statements
// are unknown or cannot be made.
func TestShardByIDWithoutStatements(t *testing.T) {
	for name, p := range map[string]*Projector{"handler only": {}, "statements fail": routed("INSERT")} {
		seen := map[int]bool{}
		for i := range 64 {
			seen[p.shardOf(broker.Received{Event: herald.Event{ID: fmt.Sprint(i)}}, 8)] = true
		}
		if len(seen) < 4 {
			t.Fatalf("%s: 64 events by id went to %d of 8 workers", name, len(seen))
		}
	}
}

// shardOf is dispatch's worker, checking that the statements it made are
// the projection's.
func (p *Projector) shardOf(m broker.Received, n int) int {
	j, w := p.dispatch(m, n)
	if p.cfg.Statements != nil && m.Event.PartitionKey == "" {
		want, err := p.cfg.Statements(m.Event)
		if !j.made || fmt.Sprint(j.stmts, j.err) != fmt.Sprint(want, err) {
			panic(fmt.Sprintf("dispatch made %v, %v; the projection makes %v, %v", j.stmts, j.err, want, err))
		}
	}
	return w
}
