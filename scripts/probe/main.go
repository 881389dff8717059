// Command probe measures what a user of `herald run` sees: producers in this
// process commit one event per transaction at a steady rate into an outbox
// table, a core NATS subscription in this process receives what the relay
// (`herald run`, another process) publishes, and each event's latency is
// the time from its commit returning to its arrival. It prints one RESULT
// line with the count, the events missing at the end and p50/p99/max.
//
//	go run ./scripts/probe -db postgres -dsn "$PG" -table herald_probe -subject 'probe.>' -rate 500 -d 20s
//
// -insert bare writes the documented plain INSERT (docs/sql.md), -insert
// outbox goes through herald.Outbox.Enqueue. -await N commits nothing: it
// waits until the JetStream stream -stream holds N more messages (a
// drain's end).
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"sync"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/nats-io/nats.go"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/postgres"
)

func main() {
	kind := flag.String("db", "postgres", "postgres or mysql")
	dsn := flag.String("dsn", "", "the database (driver DSN: a postgres:// URL or a go-sql-driver/mysql DSN)")
	table := flag.String("table", "herald_probe", "outbox table (migrated; relayed by herald run)")
	natsURL := flag.String("nats", "nats://127.0.0.1:4222", "NATS server")
	subject := flag.String("subject", "probe.>", "subjects the relay publishes the table's events to")
	rate := flag.Int("rate", 500, "events committed per second")
	dur := flag.Duration("d", 20*time.Second, "how long the producers commit")
	conns := flag.Int("conns", 4, "producer connections")
	insert := flag.String("insert", "bare", "bare (plain INSERT) or outbox (herald.Outbox.Enqueue)")
	grace := flag.Duration("grace", 10*time.Second, "how long to wait for the last events after the producers stop")
	awaitN := flag.Int("await", 0, "commit nothing; exit once -stream holds this many more messages (or after -d)")
	stream := flag.String("stream", "", "the JetStream stream -await counts")
	flag.Parse()
	if *awaitN > 0 {
		nc, err := nats.Connect(*natsURL)
		if err != nil {
			log.Fatal(err)
		}
		if err := awaitStream(nc, *stream, *awaitN, *dur); err != nil {
			log.Fatal(err)
		}
		return
	}
	p, err := newProbe(*kind, *dsn, *table, *insert)
	if err != nil {
		log.Fatal(err)
	}
	nc, err := nats.Connect(*natsURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.Subscribe(*subject, p.received)
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Unsubscribe()
	sent := p.produce(*rate, *dur, *conns)
	deadline := time.Now().Add(*grace)
	for p.count() < sent && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	p.report(os.Stdout, *kind, *insert, *rate, sent)
}

// probe holds the commit times and the latencies measured.
type probe struct {
	db        *sql.DB
	insertSQL string
	ob        *herald.Outbox
	mu        sync.Mutex
	committed map[string]time.Time
	// early holds arrivals that came before this process noted their
	// commit (the relay can be that quick): latency 0.
	early map[string]bool
	lat   []time.Duration
}

func newProbe(kind, dsn, table, insert string) (*probe, error) {
	driver, d := "pgx", postgres.Dialect
	if kind == "mysql" {
		driver, d = "mysql", mysql.Dialect
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	p := &probe{db: db, committed: map[string]time.Time{}, early: map[string]bool{},
		insertSQL: d.Rebind("INSERT INTO " + d.Quote(table) + " (event_id, topic, event_type, payload) VALUES (?, 'probe', 'Probed', ?)")}
	if insert == "outbox" {
		p.ob, err = herald.NewOutbox(herald.OutboxConfig{Table: table, Dialect: d})
	} else if insert != "bare" {
		err = fmt.Errorf("-insert %q: want bare or outbox", insert)
	}
	return p, err
}

// produce commits rate events a second for dur from conns connections,
// each in a transaction of its own, and returns how many it committed.
func (p *probe) produce(rate int, dur time.Duration, conns int) int {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	jobs := make(chan struct{}, rate)
	var wg sync.WaitGroup
	var mu sync.Mutex
	sent := 0
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				if p.commitOne() == nil {
					mu.Lock()
					sent++
					mu.Unlock()
				}
			}
		}()
	}
	for stop := time.Now().Add(dur); time.Now().Before(stop); {
		<-tick.C
		select {
		case jobs <- struct{}{}:
		default: // the producers fall behind: the rate is what they reach
		}
	}
	close(jobs)
	wg.Wait()
	return sent
}

// commitOne commits one event and notes when its commit returned.
func (p *probe) commitOne() error {
	ctx := context.Background()
	id := herald.NewID()
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if p.ob != nil {
		err = p.ob.Enqueue(ctx, tx, herald.Event{ID: id, Topic: "probe", Type: "Probed", Payload: []byte(`{}`)})
	} else {
		_, err = tx.ExecContext(ctx, p.insertSQL, id, []byte(`{}`))
	}
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.early[id] {
		delete(p.early, id)
		p.lat = append(p.lat, 0)
		return nil
	}
	p.committed[id] = time.Now()
	return nil
}

// received notes the latency of a message whose ce-id was committed here.
func (p *probe) received(m *nats.Msg) {
	now := time.Now()
	id := m.Header.Get("ce-id")
	p.mu.Lock()
	defer p.mu.Unlock()
	if at, ok := p.committed[id]; ok {
		p.lat = append(p.lat, now.Sub(at))
		delete(p.committed, id)
	} else {
		p.early[id] = true
	}
}

func (p *probe) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lat)
}

// report prints the RESULT line.
func (p *probe) report(w *os.File, kind, insert string, rate, sent int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sort.Slice(p.lat, func(i, j int) bool { return p.lat[i] < p.lat[j] })
	pct := func(q float64) float64 {
		if len(p.lat) == 0 {
			return 0
		}
		return float64(p.lat[min(len(p.lat)-1, int(q*float64(len(p.lat))))].Microseconds()) / 1000
	}
	fmt.Fprintf(w, "RESULT probe db=%s insert=%s rate=%d sent=%d received=%d missing=%d p50_ms=%.2f p99_ms=%.2f max_ms=%.2f\n",
		kind, insert, rate, sent, len(p.lat), sent-len(p.lat), pct(0.50), pct(0.99), pct(1))
}
