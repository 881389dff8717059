package verify

import (
	"sync"
	"time"
)

// outcome is what became of a transaction's events, as the producer saw it.
type outcome int

const (
	pending    outcome = iota // enqueued, transaction not yet ended
	committed                 // Commit returned nil
	rolledBack                // rolled back on purpose (or the enqueue failed)
	ambiguous                 // Commit failed: it may or may not have committed
)

// sent is one event a producer wrote.
type sent struct {
	outcome  outcome
	key      string // partition key; empty for unkeyed events
	seq      int    // position in its key's sequence, from 1
	commitAt time.Time
}

// receipt is one message the consumer read back.
type receipt struct {
	id  string
	at  time.Time
	idx int // position in the consumer's reading order
}

// ledger is what producers wrote and what the consumer read, shared
// between their goroutines.
type ledger struct {
	mu       sync.Mutex
	sent     map[string]*sent
	order    []string // event ids in the order producers wrote them
	receipts []receipt
	first    map[string]int // event id -> index in receipts of its first copy
	started  time.Time
}

func newLedger() *ledger {
	return &ledger{sent: map[string]*sent{}, first: map[string]int{}, started: time.Now()}
}

// write records events enqueued in a transaction not yet ended.
func (l *ledger) write(ids []string, key string, seqs []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, id := range ids {
		s := &sent{key: key}
		if seqs != nil {
			s.seq = seqs[i]
		}
		l.sent[id] = s
		l.order = append(l.order, id)
	}
}

// end records how the transaction of ids ended.
func (l *ledger) end(ids []string, o outcome) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		l.sent[id].outcome, l.sent[id].commitAt = o, now
	}
}

// receive records one message read back.
func (l *ledger) receive(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := receipt{id: id, at: time.Now(), idx: len(l.receipts)}
	if _, seen := l.first[id]; !seen {
		l.first[id] = r.idx
	}
	l.receipts = append(l.receipts, r)
}

// progress counts committed events and those of them read back.
func (l *ledger) progress() (committedN, receivedN int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, s := range l.sent {
		if s.outcome == committed {
			committedN++
			if _, ok := l.first[id]; ok {
				receivedN++
			}
		}
	}
	return committedN, receivedN
}

// written counts the events written so far, whatever their outcome.
func (l *ledger) written() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.order)
}

// seen says whether id was read back already.
func (l *ledger) seen(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.first[id]
	return ok
}

// aRolledBack returns a rolled-back event's id, or "" (the test hook).
func (l *ledger) aRolledBack() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range l.order {
		if l.sent[id].outcome == rolledBack {
			return id
		}
	}
	return ""
}
