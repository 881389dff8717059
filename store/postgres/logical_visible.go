package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/backoff"
)

// PostgreSQL writes a transaction's commit record to the WAL, and the
// walsender may decode and send it, before the committing backend takes the
// transaction out of the running set (ProcArrayEndTransaction); until then
// snapshots of other sessions do not see its rows. An UPDATE run in that
// window matches nothing and does not wait. Busy machines and synchronous
// replication (the backend waits for a standby in between) widen the
// window. So a log lane waits until a transaction is visible before it
// writes that transaction's rows: Record before it journals marks,
// HandOver before it updates.

// snapshot is a parsed pg_current_snapshot(): 64-bit transaction ids.
type snapshot struct {
	xmin, xmax uint64
	running    map[uint64]bool
}

// parseSnapshot reads the text form "xmin:xmax:xip,xip,…".
func parseSnapshot(s string) (snapshot, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return snapshot{}, fmt.Errorf("postgres store: snapshot %q is not xmin:xmax:xip", s)
	}
	var sn snapshot
	var err error
	if sn.xmin, err = strconv.ParseUint(parts[0], 10, 64); err != nil {
		return snapshot{}, fmt.Errorf("postgres store: snapshot %q: %w", s, err)
	}
	if sn.xmax, err = strconv.ParseUint(parts[1], 10, 64); err != nil {
		return snapshot{}, fmt.Errorf("postgres store: snapshot %q: %w", s, err)
	}
	sn.running = map[uint64]bool{}
	for _, x := range strings.Split(parts[2], ",") {
		if x == "" {
			continue
		}
		id, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			return snapshot{}, fmt.Errorf("postgres store: snapshot %q: %w", s, err)
		}
		sn.running[id] = true
	}
	return sn, nil
}

// sees reports whether a transaction known by its 32-bit xid (as the
// replication stream names it) is visible in sn. The xid is placed in the
// epoch that puts it nearest below xmax, modulo 2^32 as PostgreSQL
// compares xids; one at or above xmax has not finished.
func (sn snapshot) sees(xid uint32) bool {
	diff := int32(xid - uint32(sn.xmax))
	if diff >= 0 {
		return false
	}
	full := sn.xmax - uint64(-int64(diff))
	return full < sn.xmin || !sn.running[full]
}

// visibleWait spaces the looks at the snapshot while a transaction is not
// visible yet: from 1 ms, doubling to 50 ms.
var visibleWait = backoff.Policy{Initial: time.Millisecond, Max: 50 * time.Millisecond}

// awaitVisible returns once every transaction of xids is visible to new
// snapshots, or ctx's error. One query when they all are, as nearly always.
func (s *Store) awaitVisible(ctx context.Context, xids []uint32) error {
	if len(xids) == 0 {
		return nil
	}
	waits := backoff.Series{Policy: visibleWait}
	for {
		var text string
		if err := s.db.QueryRowContext(ctx, "SELECT pg_current_snapshot()::text").Scan(&text); err != nil {
			return fmt.Errorf("postgres store: reading the current snapshot: %w", err)
		}
		sn, err := parseSnapshot(text)
		if err != nil {
			return err
		}
		if sn.seesAll(xids) {
			return nil
		}
		t := time.NewTimer(waits.Next())
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("postgres store: waiting for committed transactions to become visible: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// seesAll reports whether sn sees every transaction of xids.
func (sn snapshot) seesAll(xids []uint32) bool {
	for _, x := range xids {
		if !sn.sees(x) {
			return false
		}
	}
	return true
}
