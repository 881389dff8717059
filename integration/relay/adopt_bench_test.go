package relay

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	. "github.com/heraldhq/herald/relay"
)

// BenchmarkAdoptDrain drains b.N events of 1 KiB from a mapped
// wallet_outbox-shaped table and from a table of Herald's own, side by
// side on each database, to a publisher that does nothing (the store's
// own limit: claim and marks), batch 100, two workers.
func BenchmarkAdoptDrain(b *testing.B) {
	for _, db := range adoptDBs {
		b.Run(db.name+"/herald", func(b *testing.B) { benchOwnTable(b, db) })
		b.Run(db.name+"/mapped", func(b *testing.B) { benchMappedTable(b, db) })
		if db.name == "MariaDB" {
			// The same table with its status and worker columns CHAR: rows
			// keep their width through claim and mark (docs/adopt.md).
			fixed := db
			fixed.ddl = []string{strings.NewReplacer("status VARCHAR(16)", "status CHAR(16)",
				"worker_id VARCHAR(128)", "worker_id CHAR(128)").Replace(db.ddl[0])}
			b.Run(db.name+"/mapped-fixed", func(b *testing.B) { benchMappedTable(b, fixed) })
			// And as docs/adopt.md recommends once Herald relays it alone:
			// CHAR, and no (status, lock_until_ms) index, whose entries
			// every claim and mark moves.
			advised := fixed
			advised.ddl = []string{strings.Replace(fixed.ddl[0], ", KEY {{N}}_lock (status, lock_until_ms)", "", 1)}
			b.Run(db.name+"/mapped-advised", func(b *testing.B) { benchMappedTable(b, advised) })
		}
	}
}

var benchPayload = `{"pad":"` + strings.Repeat("a", 1012) + `"}`

func benchOwnTable(b *testing.B, db adoptDB) {
	s := db.open(b)
	defer s.Close()
	ctx := context.Background()
	table := testenv.Name("bench_own")
	if err := s.Migrate(ctx, table); err != nil {
		b.Fatal(err)
	}
	defer s.Drop(ctx, table)
	ob, err := herald.NewOutbox(herald.OutboxConfig{Table: table, Dialect: s.Dialect()})
	if err != nil {
		b.Fatal(err)
	}
	e := &env{t: b, store: s, ob: ob, table: table}
	for start := 0; start < b.N; start += 500 {
		evs := make([]herald.Event, 0, 500)
		for i := start; i < min(b.N, start+500); i++ {
			evs = append(evs, herald.Event{Topic: "t", Type: "Bench", Payload: []byte(benchPayload)})
		}
		e.enqueue(evs...)
	}
	drain(b, e, e.lane(func(l *Lane) { l.Publisher, l.Concurrency, l.BatchSize = nopPublisher{}, 2, 100 }))
}

func benchMappedTable(b *testing.B, db adoptDB) {
	w := newWallet(b, db)
	for start := 0; start < b.N; start += 500 {
		var vals []string
		var args []any
		for i := start; i < min(b.N, start+500); i++ {
			vals = append(vals, "('voice', ?, 'Bench', 'tx', 'cmd', 1, 'GOLD', 0, 0, ?, "+db.nowMs+", "+db.nowMs+")")
			args = append(args, fmt.Sprintf("b-%08d", i), benchPayload)
		}
		if _, err := w.store.DB().Exec(w.q(`INSERT INTO {{T}} (app_code, event_id, event_type, transaction_id, command_id,
  user_id, asset_type, available_delta, frozen_delta, payload_json, created_at_ms, next_retry_at_ms) VALUES `+
			strings.Join(vals, ", ")), args...); err != nil {
			b.Fatal(err)
		}
	}
	l := w.lane(nopPublisher{})
	l.Concurrency, l.BatchSize, l.PollInterval = 2, 100, 20*time.Millisecond
	drain(b, &env{t: b, store: w.store, table: w.table}, l)
}

// drain relays lane until b.N events are delivered and reports events/s.
func drain(b *testing.B, e *env, l Lane) {
	var delivered, batches, claimNs, markNs atomic.Int64
	done := make(chan struct{})
	b.ResetTimer()
	cpu0 := processCPU(b)
	db0 := dbCPU(b)
	start := time.Now()
	r := e.startWith(Config{Lanes: []Lane{l}, Observer: ObserverFunc(func(s BatchStats) {
		if s.Claimed > 0 {
			batches.Add(1)
			claimNs.Add(int64(s.Claim))
			markNs.Add(int64(s.Mark))
		}
		if delivered.Add(int64(s.Delivered)) == int64(b.N) {
			close(done)
		}
	})})
	<-done
	elapsed := time.Since(start)
	cpu := processCPU(b) - cpu0
	if db0 >= 0 {
		b.ReportMetric(float64(dbCPU(b)-db0)*1000/float64(b.N), "db-cpu-ms/1k-events")
	}
	b.StopTimer()
	r.stop()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	// This process's CPU (relay and driver) per 1,000 events: unlike the
	// rate, other work on the machine hardly moves it.
	b.ReportMetric(cpu.Seconds()*1e6/float64(b.N), "cpu-ms/1k-events")
	if n := batches.Load(); n > 0 {
		// Where a batch's time goes (wall clock, so load moves it too).
		b.ReportMetric(float64(claimNs.Load())/float64(n)/1e6, "claim-ms/batch")
		b.ReportMetric(float64(markNs.Load())/float64(n)/1e6, "mark-ms/batch")
	}
}

// processCPU is the CPU time this process has used (user and system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dbCPU is the CPU time in ms of the database server whose process id
// HERALD_BENCH_DB_PID gives (Linux: /proc/PID/stat, readable by any user),
// -1 without it. It counts what the server did for anyone, so it means
// something only while nothing else uses that server much.
func dbCPU(b *testing.B) int64 {
	pid := os.Getenv("HERALD_BENCH_DB_PID")
	if pid == "" {
		return -1
	}
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		b.Fatalf("HERALD_BENCH_DB_PID: %v", err)
	}
	// utime and stime, in clock ticks (100 a second), are the 14th and
	// 15th fields; the command name before them may hold spaces.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("HERALD_BENCH_DB_PID: %s is not a process's stat", pid)
	}
	return (utime + stime) * 10
}
