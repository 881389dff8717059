package postgres

import (
	"strconv"
	"testing"
)

// Rule: a 32-bit xid from the replication stream is visible in a snapshot
// only when it is below xmax and not running, across an epoch boundary
// too; an xid at or past xmax has not finished.
func TestSnapshotSees(t *testing.T) {
	epoch := uint64(1) << 32
	cases := []struct {
		snap string
		xid  uint32
		want bool
	}{
		{"725:725:", 724, true},
		{"725:725:", 725, false}, // committed in the WAL, not yet out of the running set
		{"725:725:", 726, false},
		{"700:730:710,720", 710, false},
		{"700:730:710,720", 715, true},
		{"700:730:710,720", 699, true},
		{itoa(epoch+5) + ":" + itoa(epoch+10) + ":", 0xFFFFFFFA, true}, // the epoch before
		{itoa(epoch+5) + ":" + itoa(epoch+10) + ":" + itoa(epoch+7), 7, false},
		{itoa(epoch+5) + ":" + itoa(epoch+10) + ":" + itoa(epoch+7), 8, true},
		{itoa(epoch+5) + ":" + itoa(epoch+10) + ":", 10, false},
	}
	for _, c := range cases {
		sn, err := parseSnapshot(c.snap)
		if err != nil {
			t.Fatal(err)
		}
		if got := sn.sees(c.xid); got != c.want {
			t.Errorf("snapshot %s sees xid %d = %v, want %v", c.snap, c.xid, got, c.want)
		}
	}
	if _, err := parseSnapshot("1:2"); err == nil {
		t.Error("a snapshot without its running list parsed")
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
