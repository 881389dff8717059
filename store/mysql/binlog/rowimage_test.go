package binlog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/mysql/binlog"
)

// kib is the payload of the rows the row-image tests mark: large enough
// that a full image of their marks shows in the binary log's size.
const kib = 1024

// journalBig inserts n rows of 1 KiB payloads, reads them through a
// stream of lane and journals them delivered.
func (e *binlogEnv) journalBig(t *testing.T, lane string, n int) {
	t.Helper()
	st := e.open(lane)
	tx, err := e.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := tx.Exec(`INSERT INTO `+e.table+` (topic, event_type, payload) VALUES ('t', 'T', REPEAT('x', ?))`, kib); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	b := readBatch(t, st, n)
	ds := make([]store.Delivery, len(b.Records))
	for i, r := range b.Records {
		ds[i] = store.Delivery{ID: r.ID}
	}
	if err := st.Record(context.Background(), b.End, ds); err != nil {
		t.Fatal(err)
	}
}

// logEnd is the binary log's current size in bytes (all files).
func (e *binlogEnv) logEnd(t *testing.T) int64 {
	t.Helper()
	var total int64
	for _, size := range e.binaryLogs(t) {
		total += size
	}
	return total
}

// binaryLogs is SHOW BINARY LOGS: each file's size by name.
func (e *binlogEnv) binaryLogs(t *testing.T) map[string]int64 {
	t.Helper()
	rows, err := e.db.Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	files := map[string]int64{}
	for rows.Next() {
		var name string
		var size int64
		dest := []any{&name, &size}
		for len(dest) < len(cols) {
			dest = append(dest, new(any))
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		files[name] = size
	}
	return files
}

// applyAndMeasure applies the lane's journal with s and returns how many
// bytes the binary log grew by.
func (e *binlogEnv) applyAndMeasure(t *testing.T, s *binlog.Store, lane string, n int, deleteRows bool) int64 {
	t.Helper()
	before := e.logEnd(t)
	res, err := s.ApplyMarks(context.Background(), e.table, lane, 8, deleteRows)
	if err != nil || res.Marked != n {
		t.Fatalf("ApplyMarks = %+v, %v; want %d rows settled", res, err, n)
	}
	return e.logEnd(t) - before
}

// Rule: on MariaDB the marker's writes go to the binary log with minimal
// row images (the primary key, and an UPDATE's changed columns), not the
// 1 KiB rows twice over that binlog_row_image = FULL writes for every
// other statement; a user without the privilege for it (BINLOG ADMIN) gets
// full images and marks all the same.
func TestBinlogMarksWriteMinimalRowImages(t *testing.T) {
	const n = 40
	e := newBinlogEnv(t)
	for _, deleteRows := range []bool{false, true} {
		lane := map[bool]string{false: "img_mark", true: "img_delete"}[deleteRows]
		e.journalBig(t, lane, n)
		if grew := e.applyAndMeasure(t, e.s, lane, n, deleteRows); grew > n*kib/4 {
			t.Errorf("deleteRows=%v: marking %d rows of 1 KiB grew the binary log by %d bytes; minimal images need well under %d",
				deleteRows, n, grew, n*kib/4)
		}
	}
	e.exec("CREATE USER plain@'%'")
	e.exec("GRANT ALL ON herald.* TO plain@'%'")
	e.exec("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO plain@'%'")
	plain, err := binlog.Open(context.Background(), strings.Replace(e.dsn, "root@", "plain@", 1), mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	e.journalBig(t, "img_plain", n)
	if grew := e.applyAndMeasure(t, plain, "img_plain", n, false); grew < 2*n*kib {
		t.Errorf("without BINLOG ADMIN, marking %d rows of 1 KiB grew the binary log by %d bytes; full images take over %d",
			n, grew, 2*n*kib)
	}
	if got := e.countRows(t, "status = 'delivered'"); got != 2*n {
		t.Fatalf("%d rows marked delivered, want %d (the first and third lanes'; the second deleted its rows)", got, 2*n)
	}
}
