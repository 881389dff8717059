package verify

import (
	"fmt"
	"sort"
	"time"

	"github.com/heraldhq/herald/store"
)

// Verdicts' names, in the report's order.
const (
	checkLost      = "nothing committed lost"
	checkPhantom   = "nothing rolled back or unwritten sent"
	checkOrder     = "per-key order"
	checkDead      = "no dead letters"
	checkInFlight  = "nothing in flight past the lease"
	checkDuplicate = "duplicates (allowed)"
)

// reconcile compares what was written with what was read back and fills
// the figures and verdicts.
func (r *report) reconcile(led *ledger, st store.LaneStats, ordered, interrupted bool, proj string, pr *projResult) {
	led.mu.Lock()
	defer led.mu.Unlock()
	r.Interrupted = interrupted
	var lost, phantom []string
	var lat []time.Duration
	var firstCommit, lastRead time.Time
	for _, id := range led.order {
		s := led.sent[id]
		idx, got := led.first[id]
		switch s.outcome {
		case committed:
			r.Committed++
			if firstCommit.IsZero() || s.commitAt.Before(firstCommit) {
				firstCommit = s.commitAt
			}
			if !got {
				lost = append(lost, id)
				continue
			}
			at := led.receipts[idx].at
			lat = append(lat, at.Sub(s.commitAt))
			if at.After(lastRead) {
				lastRead = at
			}
		case rolledBack:
			r.RolledBack++
			if got {
				phantom = append(phantom, id)
			}
		case ambiguous:
			r.Ambiguous++
		}
	}
	for id := range led.first {
		if _, ok := led.sent[id]; !ok {
			phantom = append(phantom, id)
		}
	}
	sort.Strings(phantom)
	r.Received, r.Duplicates = len(led.first), len(led.receipts)-len(led.first)
	r.figures(lat, firstCommit, lastRead)
	order, orderEx := orderViolations(led, ordered)
	r.verdicts(lost, phantom, order, orderEx, ordered, st)
	r.projectionVerdict(led, proj, pr)
	r.Held = !r.Interrupted && r.Error == ""
	for _, v := range r.Verdicts {
		r.Held = r.Held && v.Held
	}
}

// figures sets throughput and latency percentiles.
func (r *report) figures(lat []time.Duration, first, last time.Time) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return ms(lat[min(len(lat)-1, int(p*float64(len(lat))))]) }
	r.LatencyP50, r.LatencyP99, r.LatencyMax = pct(0.50), pct(0.99), ms(lat[len(lat)-1])
	if span := last.Sub(first); span > 0 {
		r.Throughput = float64(len(lat)) / span.Seconds()
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// orderViolations counts, per key, committed events first read before an
// event of the same key committed earlier.
func orderViolations(led *ledger, ordered bool) (n int, examples []string) {
	if !ordered {
		return 0, nil
	}
	byKey := map[string][]string{}
	for _, id := range led.order {
		if s := led.sent[id]; s.key != "" && s.outcome == committed {
			byKey[s.key] = append(byKey[s.key], id)
		}
	}
	for key, ids := range byKey {
		sort.Slice(ids, func(i, j int) bool { return led.sent[ids[i]].seq < led.sent[ids[j]].seq })
		last := -1
		for _, id := range ids {
			idx, ok := led.first[id]
			if !ok {
				continue
			}
			if idx < last {
				n++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("key %s: #%d read before #%d", key, led.sent[id].seq, led.sent[id].seq-1))
				}
			}
			last = max(last, idx)
		}
	}
	return n, examples
}

// verdicts sets one verdict per guarantee of the relay.
func (r *report) verdicts(lost, phantom []string, order int, orderEx []string, ordered bool, st store.LaneStats) {
	r.Lost, r.Phantom, r.OrderViolations = len(lost), len(phantom), order
	r.Dead, r.InFlight, r.Pending = st.Dead, st.InFlight, st.Pending+st.Retrying
	add := func(name string, held bool, detail string, ids []string) {
		r.Verdicts = append(r.Verdicts, verdict{Check: name, Held: held, Detail: detail, Examples: firstN(ids, 5)})
	}
	add(checkLost, len(lost) == 0, fmt.Sprintf("%d committed, %d read back, %d lost", r.Committed, r.Committed-len(lost), len(lost)), lost)
	add(checkPhantom, len(phantom) == 0, fmt.Sprintf("%d rolled back, %d phantom", r.RolledBack, len(phantom)), phantom)
	if ordered {
		add(checkOrder, order == 0, fmt.Sprintf("%d out of order", order), orderEx)
	} else {
		r.Verdicts = append(r.Verdicts, verdict{Check: checkOrder, Held: true, Skipped: true, Detail: "not asked: the lane's ordering is none"})
	}
	add(checkDead, st.Dead == 0, fmt.Sprintf("%d dead", st.Dead), nil)
	add(checkInFlight, st.InFlight == 0, fmt.Sprintf("%d in flight, %d pending at the end", st.InFlight, st.Pending+st.Retrying), nil)
	add(checkDuplicate, true, fmt.Sprintf("%d extra copies", r.Duplicates), nil)
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
