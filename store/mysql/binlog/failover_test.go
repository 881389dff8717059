package binlog_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/mysql/binlog"
)

// Rule: a lane's position survives a failover to a replica (MariaDB):
// the primary dies after the lane recorded r1 and r2 and after r3 was
// committed (and replicated) but not recorded; on the promoted replica the
// same lane resumes from its GTID position (the replica's binary log has
// other file names and offsets) and reads r3 then what is written there,
// nothing recorded twice, nothing skipped, with no lost-position recovery.
// Its record then names the replica's own file and server id, and a
// reopen on the replica resumes from that file and offset.
func TestBinlogFailoverResumesFromGTID(t *testing.T) {
	primary := newBinlogEnv(t)
	replica := newReplica(t, primary)
	st := primary.open("failover")
	primary.insert("r1", "r2")
	if got := read(t, st, 2); strings.Join(got, " ") != "r1 r2" {
		t.Fatalf("on the primary the stream read %v", got)
	}
	primary.insert("r3") // committed and replicated, never read on the primary
	replica.catchUp(t, primary)
	primary.m.Kill()
	st.Close()
	replica.exec("STOP SLAVE")
	replica.exec("RESET SLAVE ALL")

	st = replica.open("failover")
	replica.insert("r4")
	if got := read(t, st, 2); strings.Join(got, " ") != "r3 r4" {
		t.Fatalf("after the failover the stream read %v, want r3 r4", got)
	}
	var file, gtid string
	var server int64
	if err := replica.db.QueryRow(`SELECT log_file, server_id, gtid_pos FROM herald_log_lanes WHERE lane = 'failover'`).
		Scan(&file, &server, &gtid); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(file, "replica-bin.") || server != 2 || !strings.Contains(gtid, "0-2-") {
		t.Fatalf("the lane's record on the replica = %s, server_id %d, GTID %s; want a replica-bin file, server_id 2 and a GTID of server 2",
			file, server, gtid)
	}
	st.Close()
	replica.insert("r5")
	if got := read(t, replica.open("failover"), 1); strings.Join(got, " ") != "r5" {
		t.Fatalf("reopened on the replica the stream read %v, want r5", got)
	}
}

// Rule: a recorded position whose server_id is not the server's own is
// refused with ErrLogPositionLost naming both ids when no GTID position
// was recorded (its file and offset would point into another server's
// log), and resumes from the GTID position when there is one.
func TestBinlogPositionOfAnotherServer(t *testing.T) {
	e := newBinlogEnv(t)
	st := e.open("moved")
	e.insert("m1")
	read(t, st, 1)
	st.Close()
	e.insert("m2")
	var gtid string
	if err := e.db.QueryRow(`SELECT gtid_pos FROM herald_log_lanes WHERE lane = 'moved'`).Scan(&gtid); err != nil || gtid == "" {
		t.Fatalf("recorded GTID position %q, %v; want one", gtid, err)
	}
	e.exec(`UPDATE herald_log_lanes SET server_id = 99, gtid_pos = '' WHERE lane = 'moved'`)
	_, err := e.s.OpenLog(context.Background(), e.params("moved"))
	if !errors.Is(err, store.ErrLogPositionLost) || !strings.Contains(err.Error(), "server_id 99") {
		t.Fatalf("OpenLog of another server's position without a GTID: %v, want ErrLogPositionLost naming server_id 99", err)
	}
	e.exec(`UPDATE herald_log_lanes SET gtid_pos = ? WHERE lane = 'moved'`, gtid)
	if got := read(t, e.open("moved"), 1); strings.Join(got, " ") != "m2" {
		t.Fatalf("resumed from the GTID position the stream read %v, want m2", got)
	}
}

// newReplica starts a second MariaDB (server_id 2, its binary log named
// replica-bin, replicated transactions logged) replicating primary by
// GTID from the start of its log, and opens a store on its copy of
// primary's database.
func newReplica(t *testing.T, primary *binlogEnv) *binlogEnv {
	t.Helper()
	m := testenv.NewMariaDB(t)
	m.Settings = []string{"--log-bin=replica-bin", "--binlog-format=ROW", "--binlog-row-image=FULL", "--server-id=2", "--log-slave-updates"}
	m.Start(t)
	for _, q := range []string{
		"CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = " + strconv.Itoa(primary.m.Port) +
			", MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1",
		"START SLAVE",
	} {
		if err := m.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	r := &binlogEnv{t: t, m: m, dsn: m.DSN("herald"), table: primary.table}
	r.catchUp(t, primary)
	s, err := binlog.Open(context.Background(), r.dsn, mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r.s, r.db = s, s.DB()
	return r
}

// catchUp waits until the replica r has applied everything primary has
// written so far.
func (r *binlogEnv) catchUp(t *testing.T, primary *binlogEnv) {
	t.Helper()
	var pos string
	if err := primary.db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", r.m.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testenv.WaitFor(t, 60*time.Second, 100*time.Millisecond, "the replica at GTID "+pos, func() bool {
		var res sql.NullInt64 // 0 once reached, -1 after the timeout
		return db.QueryRow("SELECT MASTER_GTID_WAIT(?, 1)", pos).Scan(&res) == nil && res.Valid && res.Int64 == 0
	})
}
