#!/usr/bin/env bash
# Projections as users run them: a YAML projection under `herald run` (its own
# process, a config file, 8 workers, one upsert per event into a 1,000-row read
# model) beside the minimal ledger (minledger -w 8 -tx 32), alternating in each
# of R rounds, from the outbox table (source.outbox) and, with SOURCE=nats,
# from a NATS stream that a lane (a herald run of its own) fills first. Usage:
#   PEERS_BIN=dir-with-minledger scripts/bench-projection-run.sh mysql|postgres [N] [rounds]
# The rate is taken on the database clock: applied events over the span of
# the ledger rows' updated_at (start-up excluded). PRELOAD=M puts M finished
# events in the outbox and the ledger first (the scan's cost per event must
# not grow with them). HERALD is the binary (default: go build of this tree);
# CPUPROFILE=FILE profiles the last round's herald run.
set -euo pipefail
kind=${1:?mysql or postgres}; n=${2:-100000}; rounds=${3:-3}
: "${PEERS_BIN:?directory holding the built peer programs}"
source=${SOURCE:-outbox}; preload=${PRELOAD:-0}
export MYSQL_DSN=${MYSQL_DSN:-root@tcp(127.0.0.1:3306)/peers}
export PG_DSN=${PG_DSN:-postgres://postgres@127.0.0.1:5432/peers?sslmode=disable}
nats=${NATS_URL:-nats://127.0.0.1:4222}
work=$(mktemp -d); out=$work/runs
trap 'pkill -f "$work/" 2>/dev/null || true; rm -rf "$work"' EXIT
herald=${HERALD:-}
if [ -z "$herald" ]; then herald=$work/herald; go build -o "$herald" ./cmd/herald; fi
if [ "$kind" = mysql ]; then
  driver=mysql; dsn=${HERALD_DSN:-root@tcp(127.0.0.1:3306)/test}
  sql() { mysql -h127.0.0.1 -uroot test -N -e "$1"; }
  series() { echo "SELECT seq FROM seq_1_to_$1"; }
  uuid=UUID; payload="CONCAT('{\"user\":', seq % 1000, ',\"n\":1}')"
  span="TIMESTAMPDIFF(MICROSECOND, MIN(updated_at), MAX(updated_at)) / 1e6"
  upsert="ON DUPLICATE KEY UPDATE total = total + VALUES(total)"
  model="CREATE TABLE IF NOT EXISTS projrun_model (user_id BIGINT PRIMARY KEY, total BIGINT NOT NULL)"
else
  driver=postgres; dsn=${HERALD_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
  sql() { psql -h127.0.0.1 -Upostgres -d test -Atq -c "$1"; }
  series() { echo "SELECT seq FROM generate_series(1, $1) seq"; }
  uuid=gen_random_uuid; payload="convert_to('{\"user\":' || seq % 1000 || ',\"n\":1}', 'UTF8')"
  span="EXTRACT(EPOCH FROM MAX(updated_at) - MIN(updated_at))"
  upsert="ON CONFLICT (user_id) DO UPDATE SET total = projrun_model.total + excluded.total"
  model="CREATE TABLE IF NOT EXISTS projrun_model (user_id BIGINT PRIMARY KEY, total BIGINT NOT NULL)"
fi
# config ROUND [PART]: the run's config (a stream of its own per round for
# SOURCE=nats); PART lane is the lane alone, projection the projection alone.
config() {
  local lane="" src="{outbox: herald_projrun}"
  if [ "${SOURCE:-outbox}" = nats ]; then
    lane="lanes:
  - {name: projrun, table: herald_projrun, broker: nats, destination: \"projrun$1.{event_type}\", batch_size: 1000, concurrency: 2}"
    src="{broker: nats, destination: projrun$1.Gave}"
  fi
  [ "${2:-}" = projection ] && lane=""
  cat <<YAML
store: {driver: $driver, dsn: "$dsn"}
brokers:
  nats: {type: nats, url: "$nats", stream: PROJRUN$1, subjects: ["projrun$1.>"], create_stream: true}
admin: {addr: "127.0.0.1:0"}
$lane
YAML
  [ "${2:-}" = lane ] && return
  cat <<YAML
projections:
  - name: projrun
    source: $src
    table: herald_projrun_ledger
    workers: 8
    statements:
      - "INSERT INTO projrun_model (user_id, total) VALUES (:payload.user, :payload.n) $upsert"
YAML
}
# The outbox and ledger tables are created by migrating a config with a lane
# and the projection on them, anew for every run (fresh_tables): a table
# emptied by DELETE keeps its dead rows where autovacuum is off (as on the
# machine docs/benchmarks.md measures on), and rounds on kept tables ran
# slower one after another (0.40, 0.29, 0.26, 0.26 of minledger), while
# minledger makes its tables anew every run.
SOURCE=nats config 0 >"$work/migrate.yaml"
fresh_tables() {
  sql "DROP TABLE IF EXISTS herald_projrun" >/dev/null
  sql "DROP TABLE IF EXISTS herald_projrun_ledger" >/dev/null
  sql "DROP TABLE IF EXISTS projrun_model" >/dev/null
  sql "DELETE FROM herald_migrations WHERE table_name IN ('herald_projrun', 'herald_projrun_ledger')" >/dev/null 2>&1 || true
  sql "$model" >/dev/null
  "$herald" migrate --config "$work/migrate.yaml" >/dev/null
}
fill() { # fill N STATUS: N outbox rows
  sql "INSERT INTO herald_projrun (event_id, topic, event_type, payload, status) SELECT $uuid(), 'projrun', 'Gave', $payload, '$2' FROM ($(series "$1")) s" >/dev/null
}
reset() {
  fresh_tables
  if [ "$preload" -gt 0 ]; then
    fill "$preload" delivered
    sql "INSERT INTO herald_projrun_ledger (projection, tenant, event_id, state) SELECT 'projrun', tenant, event_id, 'done' FROM herald_projrun" >/dev/null
  fi
}
applied() { sql "SELECT COUNT(*) FROM herald_projrun_ledger WHERE projection = 'projrun' AND state = 'done'"; }
delivered() { sql "SELECT COUNT(*) FROM herald_projrun WHERE status = 'delivered'"; }
# fill_stream BIN ROUND: a run of the lane alone until it delivered every
# pending row, so that the projection reads a full stream (when both ran in
# one process, the projection only kept pace with the lane filling it).
fill_stream() {
  config "$2" lane >"$work/lane$2.yaml"
  "$1" run --config "$work/lane$2.yaml" >"$work/lane.log" 2>&1 & local pid=$!
  local deadline=$((SECONDS + 300))
  until [ "$(delivered)" -ge "$((n + preload))" ]; do
    kill -0 $pid 2>/dev/null || { tail "$work/lane.log" >&2; return 1; }
    [ $SECONDS -lt $deadline ] || { echo "timeout filling the stream" >&2; kill -TERM $pid; return 1; }
    sleep 0.5
  done
  kill -TERM $pid; wait $pid || true
}
# run_rate BIN ROUND: fill, run until every event is applied, stop; the rate
# of the events applied in this run on the database clock.
run_rate() {
  reset; fill "$n" pending
  if [ "$source" = nats ]; then fill_stream "$1" "$2"; config "$2" projection >"$work/run$2.yaml"
  else config "$2" >"$work/run$2.yaml"; fi
  local t0; t0=$(sql "SELECT MAX(updated_at) FROM herald_projrun_ledger WHERE projection = 'projrun'")
  local prof=""; [ -n "${CPUPROFILE:-}" ] && [ "$2" = "$rounds" ] && prof="--cpuprofile=$CPUPROFILE"
  "$1" run --config "$work/run$2.yaml" $prof >"$work/run.log" 2>&1 & local pid=$!
  local want=$((n + preload)) deadline=$((SECONDS + 900))
  until [ "$(applied)" -ge "$want" ]; do
    kill -0 $pid 2>/dev/null || { tail "$work/run.log" >&2; return 1; }
    [ $SECONDS -lt $deadline ] || { echo "timeout: $(applied) of $want applied" >&2; kill -TERM $pid; return 1; }
    sleep 0.5
  done
  kill -TERM $pid; wait $pid || true
  local after=""; [ -n "$t0" ] && after=" AND updated_at > '$t0'"
  sql "SELECT ROUND(COUNT(*) / ($span)) FROM herald_projrun_ledger WHERE projection = 'projrun' AND state = 'done'$after"
}
for r in $(seq "$rounds"); do
  echo "$r minledger $("$PEERS_BIN/minledger" -db "$kind" -n "$n" -w 8 -tx 32 2>/dev/null |
    grep -o 'events_per_s=[0-9.]*' | cut -d= -f2)" | tee -a "$out"
  echo "$r herald $(run_rate "$herald" "$r")" | tee -a "$out"
done
python3 - "$out" "$kind" "$n" "$source" "$preload" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r, name, *v = line.split()
    if v and v[0].replace('.', '').isdigit():
        runs[name][r] = float(v[0])
base = runs["minledger"]
print(f"== YAML projection under herald run, {sys.argv[2]}, source {sys.argv[4]}, N={sys.argv[3]}, preloaded {sys.argv[5]}")
per = [runs["herald"][r] / base[r] for r in runs["herald"] if base.get(r)]
print(f"herald {statistics.median(runs['herald'].values()):8.0f} vs minledger {statistics.median(base.values()):8.0f} events/s:"
      f" median ratio {statistics.median(per):.2f} (rounds: {' '.join(f'{x:.2f}' for x in per)})")
PY
