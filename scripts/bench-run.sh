#!/usr/bin/env bash
# What a user gets: Herald as users run it (`herald run` from a config file,
# its own process) beside the peers, in one script, alternating, R rounds.
#
#   PEERS_BIN=dir-with-the-peer-programs scripts/bench-run.sh mysql|postgres [N] [batch] [workers] [rounds]
#
# Each round drains N events of 1 KiB with each peer (the minimal relay,
# Watermill's forwarder, River on PostgreSQL), then with `herald run` (the
# table filled by SQL first, the rate taken on the database clock from the
# first to the last delivered_at, so start-up is excluded), then with
# `herald bench throughput` (the harness, for comparison), all to the NATS
# server at NATS_URL. Then the latency probe (scripts/probe): producers in
# another process commit one event per transaction at RATE/s (default 500)
# for 20 s, with a bare INSERT and with Outbox.Enqueue, into a lane with
# default settings, and a core NATS subscriber measures commit → arrival
# (CONNS producer connections, default 4).
# Prints every figure and the medians of the per-round ratios. LATENCY=0
# skips the latency probe (a grid of throughput cells).
# SOURCE=log drains through a log lane instead (docs/loglanes.md; the
# database needs its log on, so point HERALD_DSN, PG_DSN or MYSQL_DSN and
# PGPORT or MYSQL_TCP_PORT at such a server), ON_DELIVERED=delete with it
# for a lane that deletes its rows. Each round then starts the lane anew
# (slot and position gone, as `herald bench` does), runs it until one
# event went through so that its slot or binary-log position exists,
# stops it, fills the table in transactions of 1,000 rows, and starts it
# again; the rate is taken from the NATS stream's own timestamps (first to
# last message of the drain), since a deleting lane keeps no delivered_at.
# The latency lane is then a log lane too, started anew for each probe.
# PEERS (default: every peer for the database) names the peers to run,
# HARNESS=0 skips `herald bench throughput`.
# RELAYS=K runs K `herald run` processes on the drain lane at once (as
# replicas of a service would; polling lanes only), each with the lane's
# batch and workers.
# HERALD (default: go build of this tree) is the binary; HERALD_BEFORE, a
# second one run in the same rounds.
set -euo pipefail
kind=${1:?mysql or postgres}; n=${2:-100000}; b=${3:-1000}; w=${4:-2}; rounds=${5:-5}
: "${PEERS_BIN:?directory holding the built peer programs}"
rate=${RATE:-500}
source=${SOURCE:-poll}; on_delivered=${ON_DELIVERED:-mark}
if [ "${RELAYS:-1}" != 1 ] && [ "$source" = log ]; then echo "RELAYS is for polling lanes (a log lane has one reader)" >&2; exit 2; fi
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
export MYSQL_DSN=${MYSQL_DSN:-root@tcp(127.0.0.1:3306)/peers}
export PG_DSN=${PG_DSN:-postgres://postgres@127.0.0.1:5432/peers?sslmode=disable}
work=$(mktemp -d); out=$work/runs
trap 'pkill -f "$work/" 2>/dev/null || true; rm -rf "$work"' EXIT
herald=${HERALD:-}
if [ -z "$herald" ]; then herald=$work/herald; go build -o "$herald" ./cmd/herald; fi
go build -o "$work/probe" ./scripts/probe
if [ "$kind" = mysql ]; then
  driver=mysql; dsn=${HERALD_DSN:-root@tcp(127.0.0.1:3306)/test}
  sql() { mysql -h127.0.0.1 -uroot test -N -e "$1"; }
  sql_file() { mysql -h127.0.0.1 -uroot test -N <"$1"; }
  rows() { echo "INSERT INTO herald_run (event_id, topic, event_type, payload) SELECT UUID(), 'run', 'Ran', REPEAT('x', 1024) FROM seq_1_to_$1;"; }
  span="SELECT ROUND(COUNT(*) / (TIMESTAMPDIFF(MICROSECOND, MIN(available_at), MAX(available_at)) / 1e6)) FROM herald_run WHERE status = 'delivered'"
else
  driver=postgres; dsn=${HERALD_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
  sql() { psql -h127.0.0.1 -Upostgres -d test -Atq -c "$1"; }
  sql_file() { psql -h127.0.0.1 -Upostgres -d test -Atq -f "$1"; }
  rows() { echo "INSERT INTO herald_run (event_id, topic, event_type, payload) SELECT gen_random_uuid(), 'run', 'Ran', convert_to(repeat('x', 1024), 'UTF8') FROM generate_series(1, $1);"; }
  span="SELECT ROUND(COUNT(*) / EXTRACT(EPOCH FROM MAX(delivered_at) - MIN(delivered_at))) FROM herald_run WHERE status = 'delivered'"
fi
# The drain lane (batch and workers as asked) and the latency lane (every
# setting at its default).
cat >"$work/drain.yaml" <<YAML
store: {driver: $driver, dsn: "$dsn"}
brokers:
  nats: {type: nats, url: "$NATS_URL", stream: HERALDRUN, subjects: ["heraldrun.>"], create_stream: true}
admin: {addr: "127.0.0.1:0"}
lanes:
  - {name: run, table: herald_run, broker: nats, destination: "heraldrun.{event_type}", batch_size: $b, concurrency: $w, source: $source$([ "$on_delivered" = delete ] && echo ", on_delivered: delete")}
YAML
cat >"$work/latency.yaml" <<YAML
store: {driver: $driver, dsn: "$dsn"}
brokers:
  nats: {type: nats, url: "$NATS_URL", stream: HERALDPROBE, subjects: ["heraldprobe.>"], create_stream: true}
admin: {addr: "127.0.0.1:0"}
lanes:
  - {name: probe, table: herald_probe, broker: nats, destination: "heraldprobe.{event_type}", source: $source$([ "$on_delivered" = delete ] && echo ", on_delivered: delete")}
YAML
sed "s/herald_run/herald_bench/; s/heraldrun/heraldbench/g; s/HERALDRUN/HERALDBENCH/" "$work/drain.yaml" >"$work/bench.yaml"
"$herald" migrate --config "$work/drain.yaml" >/dev/null
"$herald" migrate --config "$work/latency.yaml" >/dev/null
rate_of() { grep -o 'events_per_s=[0-9.]*\|jobs_per_s=[0-9.]*' | head -1 | cut -d= -f2; }
peer_rate() {
  case $1 in
  minimal) "$PEERS_BIN/naiverelay" -db "$kind" -mode drain -n "$n" -w "$w" -b "$b" ;;
  watermill) "$PEERS_BIN/wmforward" -db "$kind" -mode drain -n "$n" ;;
  river) "$PEERS_BIN/riverbench" -mode drain -work nats -n "$n" -workers 2000 -cooldown 10ms ;;
  esac 2>/dev/null | rate_of
}
# run_rate BIN: a fresh table (as the peers and the harness drain: they
# drop and create theirs), filled; run until every event has reached the
# broker, stop. The end is seen by asking NATS for the stream's count
# (probe -await), not the database: a COUNT(*) every half second slowed a
# PostgreSQL drain by about a quarter (and a subscriber to every message
# cost a fan-out copy of each).
run_rate() {
  sql "DROP TABLE IF EXISTS herald_run" >/dev/null; "$1" migrate --config "$work/drain.yaml" >/dev/null
  sql "$(rows "$n")" >/dev/null
  "$work/probe" -await "$n" -stream HERALDRUN -d 600s >"$work/await.out" & local waiter=$!
  until grep -q READY "$work/await.out"; do sleep 0.05; done
  local pids=() i
  for i in $(seq "${RELAYS:-1}"); do "$1" run --config "$work/drain.yaml" >"$work/run$i.log" 2>&1 & pids+=($!); done
  wait $waiter || { cat "$work"/run*.log >&2; kill -TERM "${pids[@]}"; return 1; }
  kill -TERM "${pids[@]}"; wait "${pids[@]}" || true
  sql "$span"
}
# forget LANE CONFIG: what a log lane keeps (slot or position, journal)
# gone (`herald lane reset`), as `herald bench` does with its own lane: a
# lane that starts anew reads from the log's end. A reader that just
# stopped may hold its lease or slot a moment longer, hence the tries.
forget() {
  for try in 1 2 3 4 5 6 7 8 9 10; do "$herald" lane reset "$1" --config "$2" >/dev/null 2>&1 && return; sleep 0.5; done
  echo "warning: could not reset log lane $1 (a reader still holds it?): it may resume" >&2
}
# run_rate_log BIN: the same for a log lane. The lane starts anew (its
# slot or position and journal gone, the table made again), goes through
# one event so that its slot or position exists (a lane's first start
# hands the rows committed before it to its polling workers), stops; the
# table is filled in transactions of 1,000 rows, and the rate is the
# stream's, from the drain's first message to its last.
run_rate_log() {
  forget run "$work/drain.yaml"
  sql "DROP TABLE IF EXISTS herald_run" >/dev/null; "$1" migrate --config "$work/drain.yaml" >/dev/null
  "$work/probe" -await 1 -stream HERALDRUN -d 120s >"$work/await.out" & local waiter=$!
  until grep -q READY "$work/await.out"; do sleep 0.05; done
  "$1" run --config "$work/drain.yaml" >"$work/run.log" 2>&1 & local pid=$!
  sleep 1; sql "$(rows 1)" >/dev/null
  wait $waiter || { cat "$work/run.log" >&2; kill -TERM $pid; return 1; }
  kill -TERM $pid; wait $pid || true
  for i in $(seq $((n / 1000))); do rows 1000; done >"$work/fill.sql"
  sql_file "$work/fill.sql" >/dev/null
  "$work/probe" -await "$n" -stream HERALDRUN -d 600s >"$work/await.out" & waiter=$!
  until grep -q READY "$work/await.out"; do sleep 0.05; done
  "$1" run --config "$work/drain.yaml" >"$work/run.log" 2>&1 & pid=$!
  wait $waiter || { cat "$work/run.log" >&2; kill -TERM $pid; return 1; }
  kill -TERM $pid; wait $pid || true
  grep -o 'events_per_s=[0-9]*' "$work/await.out" | cut -d= -f2
}
bench_rate() {
  local log=""
  [ "$source" = log ] && log="--source log" && [ "$on_delivered" = delete ] && log="$log --on-delivered delete"
  "$1" --config "$work/bench.yaml" bench throughput --events "$n" --batch "$b" --workers "$w" --runs 1 --json $log |
    python3 -c 'import json,sys; print(int(json.load(sys.stdin)["Broker"]))'
}
# probe_line BIN INSERT: the probe's RESULT against herald run on the latency
# lane, on a fresh table: where PostgreSQL runs with autovacuum off (as on the
# machine the figures in docs/benchmarks.md come from),
# so a table kept from round to round carried every earlier round's dead
# rows (over a million after a few high-rate rounds) and each round's tails
# grew with them.
probe_line() {
  [ "$source" = log ] && forget probe "$work/latency.yaml"
  sql "DROP TABLE IF EXISTS herald_probe" >/dev/null; "$1" migrate --config "$work/latency.yaml" >/dev/null
  "$1" run --config "$work/latency.yaml" >"$work/latency.log" 2>&1 & local pid=$!
  sleep 2
  "$work/probe" -db "$kind" -dsn "$dsn" -table herald_probe -subject 'heraldprobe.>' -rate "$rate" -conns "${CONNS:-4}" -d 20s -insert "$2" | grep RESULT
  kill -TERM $pid; wait $pid || true
}

peers="minimal watermill"; [ "$kind" = postgres ] && peers="$peers river"
peers=${PEERS-$peers}
for r in $(seq "$rounds"); do
  for p in $peers; do echo "$r $p $(peer_rate "$p")" | tee -a "$out"; done
  for who in herald before; do
    bin=$herald; [ $who = before ] && bin=${HERALD_BEFORE:-}
    [ -n "$bin" ] || continue
    drain=run_rate; [ "$source" = log ] && drain=run_rate_log
    echo "$r $who-run $($drain "$bin")" | tee -a "$out"
    [ "${HARNESS:-1}" = 0 ] || echo "$r $who-bench $(bench_rate "$bin")" | tee -a "$out"
  done
  [ "${LATENCY:-1}" = 0 ] && continue
  # The minimal relay's latency mode commits from one connection in its own
  # process, so above a thousand or two a second it reaches less than RATE:
  # events= (in 20 s) says what rate its figures were taken at.
  echo "$r minimal-latency $("$PEERS_BIN/naiverelay" -db "$kind" -mode latency -rate "$rate" -d 20s 2>/dev/null | grep -o "events=[0-9]* missing=[0-9]* p50_ms=[0-9.]* p99_ms=[0-9.]*" | head -1)" | tee -a "$work/lat"
  for ins in bare outbox; do echo "$r herald-$ins $(probe_line "$herald" $ins)" | tee -a "$work/lat"; done
done
python3 - "$out" "$kind" "$n" "$b" "$w" "$source/$on_delivered" "${RELAYS:-1}" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r, name, *v = line.split()
    if v and v[0].replace('.', '').isdigit():
        runs[name][r] = float(v[0])
print(f"== {sys.argv[2]} N={sys.argv[3]} batch {sys.argv[4]} workers {sys.argv[5]} source {sys.argv[6]} relays {sys.argv[7]}: medians, and Herald's median per-round ratio")
for who in ("herald-run", "herald-bench", "before-run", "before-bench"):
    if who not in runs:
        continue
    line = f"{who:13} {statistics.median(runs[who].values()):8.0f} events/s"
    for peer in ("minimal", "watermill", "river"):
        if peer in runs:
            per = [runs[who][r] / runs[peer][r] for r in runs[who] if runs[peer].get(r)]
            line += f" | {statistics.median(per):.2f}x {peer}"
    print(line)
for peer in ("minimal", "watermill", "river"):
    if peer in runs:
        print(f"{peer:13} {statistics.median(runs[peer].values()):8.0f} events/s")
PY
if [ -f "$work/lat" ]; then echo "== latency lines (RATE=$rate/s):"; cat "$work/lat"; fi
