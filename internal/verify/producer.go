package verify

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/config"
)

// producers is how many goroutines commit events; keysPer is how many
// partition keys each owns (a key's sequence is written by one producer,
// so its commit order is known).
const (
	producers = 4
	keysPer   = 4
	// lateHold is how long a late transaction stays open after its insert,
	// while other transactions commit rows with higher ids.
	lateHold = 300 * time.Millisecond
)

// producer commits one share of the events in plain transactions, paced
// over the production window: most commit at once, one in ten rolls back,
// one in ten commits late, three in ten write one key's next events in
// sequence.
type producer struct {
	n      int
	db     *sql.DB
	outbox *herald.Outbox
	lane   config.Lane
	led    *ledger
	seq    map[string]int
	errs   int
	// lastErr is the last error a transaction met, for the report.
	lastErr error
}

// produce writes events until share are written or the window ends.
func (p *producer) produce(ctx context.Context, share int, window time.Duration) {
	began := time.Now()
	written := 0
	for i := 0; written < share && ctx.Err() == nil; i++ {
		// Pace: the written share follows the window linearly.
		if due := began.Add(window * time.Duration(written) / time.Duration(share)); time.Until(due) > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(due)):
			}
		}
		// Behind the pace (a slow database) it goes on for as long again.
		if time.Since(began) > 2*window {
			return
		}
		written += p.transaction(ctx, i, min(1+i%5, share-written))
	}
}

// transaction writes n events in one transaction of the kind i picks and
// returns n.
func (p *producer) transaction(ctx context.Context, i, n int) int {
	key, seqs := "", []int(nil)
	if slices.Contains([]int{1, 4, 8}, i%10) {
		key = fmt.Sprintf("p%d-k%d", p.n, i%keysPer)
		for range n {
			p.seq[key]++
			seqs = append(seqs, p.seq[key])
		}
	}
	ids, events := p.events(n, key)
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		p.fail(err)
		p.unseq(key, seqs)
		return 0
	}
	p.led.write(ids, key, seqs)
	if err := p.outbox.Enqueue(ctx, tx, events...); err != nil {
		_ = tx.Rollback()
		p.led.end(ids, rolledBack)
		p.fail(err)
		p.unseq(key, seqs)
		return n
	}
	switch i % 10 {
	case 3:
		_ = tx.Rollback()
		p.led.end(ids, rolledBack)
		p.unseq(key, seqs)
		return n
	case 6:
		time.Sleep(lateHold)
	}
	if err := tx.Commit(); err != nil {
		p.led.end(ids, ambiguous)
		p.fail(err)
		return n
	}
	p.led.end(ids, committed)
	return n
}

// unseq gives back the sequence numbers of a rolled-back keyed
// transaction: the key's next committed event takes them.
func (p *producer) unseq(key string, seqs []int) {
	if key != "" {
		p.seq[key] -= len(seqs)
	}
}

// events builds n events of the lane's tenant and a type it takes.
func (p *producer) events(n int, key string) ([]string, []herald.Event) {
	tenant := p.lane.Tenant
	if tenant == "" {
		tenant = "verify"
	}
	typ := "herald.verify"
	if len(p.lane.IncludeTypes) > 0 {
		typ = p.lane.IncludeTypes[0]
	}
	for slices.Contains(p.lane.ExcludeTypes, typ) {
		typ += ".v"
	}
	ids := make([]string, n)
	evs := make([]herald.Event, n)
	for j := range n {
		ids[j] = uuid.Must(uuid.NewV7()).String()
		evs[j] = herald.Event{ID: ids[j], Tenant: tenant, Topic: "verify", Type: typ, PartitionKey: key,
			Payload: []byte(`{"verify":true,"producer":` + fmt.Sprint(p.n) + `}`)}
	}
	return ids, evs
}

func (p *producer) fail(err error) {
	p.errs++
	p.lastErr = err
}
