package projector

import (
	"slices"
	"time"

	"github.com/heraldhq/herald/store"
)

// maxGapRun is the longest run of missing ids kept as gaps: transactions
// in flight leave short runs; a longer one is ids that retention deleted
// or a sequence that jumped, which the sweep covers.
const maxGapRun = 1000

// maxGaps bounds the gaps kept (the oldest go first); the sweep finds
// whatever a dropped gap would have.
const maxGaps = 100_000

// maxGapRead is the most ids one read by id asks for.
const maxGapRead = 500

// nextRead records a page read after the cursor: ids missing in it become
// gaps, the cursor moves to its last id, open rows are buffered.
func (s *OutboxSource) nextRead(page store.OutboxPage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, prev := time.Now(), s.cursor
	for _, id := range page.Visible {
		if run := id - prev - 1; run > 0 && run <= maxGapRun {
			for g := prev + 1; g < id; g++ {
				s.gaps[g] = now
			}
		}
		prev = id
	}
	s.cursor = max(s.cursor, prev)
	s.trimGaps()
	s.hold(page.Open)
}

// gapsDue returns up to maxGapRead gaps to read again, once per
// PollInterval, after dropping those older than Lookback.
func (s *OutboxSource) gapsDue() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if len(s.gaps) == 0 || now.Sub(s.lastGaps) < s.cfg.PollInterval {
		return nil
	}
	s.lastGaps = now
	ids := make([]int64, 0, min(len(s.gaps), maxGapRead))
	for id, seen := range s.gaps {
		if now.Sub(seen) > s.cfg.Lookback {
			delete(s.gaps, id)
			continue
		}
		if len(ids) < maxGapRead {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// gapsRead forgets the gaps a read by id saw and buffers the open ones.
func (s *OutboxSource) gapsRead(page store.OutboxPage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range page.Visible {
		delete(s.gaps, id)
	}
	s.hold(page.Open)
}

// trimGaps drops the oldest gaps beyond maxGaps; the caller holds s.mu.
func (s *OutboxSource) trimGaps() {
	if len(s.gaps) <= maxGaps {
		return
	}
	ids := make([]int64, 0, len(s.gaps))
	for id := range s.gaps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids[:len(ids)-maxGaps] {
		delete(s.gaps, id)
	}
}

// sweepDue starts a sweep every FullScanInterval and returns where its
// next page starts.
func (s *OutboxSource) sweepDue() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sweep < 0 && time.Since(s.lastFull) >= s.cfg.FullScanInterval && s.cursor > 0 {
		s.sweep, s.sweepTo, s.lastFull = 0, s.cursor, time.Now()
	}
	return s.sweep, s.sweep >= 0
}

// sweepRead buffers a sweep page's open rows and moves the sweep on,
// ending it at the cursor it began with or at the table's end.
func (s *OutboxSource) sweepRead(page store.OutboxPage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold(page.Open)
	if n := len(page.Visible); n == 0 || n < s.cfg.PageSize || page.Visible[n-1] >= s.sweepTo {
		s.sweep = -1
		return
	}
	s.sweep = page.Visible[len(page.Visible)-1]
}
