#!/usr/bin/env bash
# Drain N events of 1 KiB with Herald (`herald bench throughput`, every
# guarantee on) and with the peer programs (minimal relay, Watermill
# forwarder, River on PostgreSQL), alternating in each of R rounds, to the
# NATS server at $NATS_URL; print every run, each program's median, and
# Herald's ratio to each peer (median of the per-round ratios, and the
# ratio of the medians), and Herald's store limit (claim + mark with a no-op
# publisher, run by the same command). Usage:
#   PEERS_BIN=dir-with-naiverelay-wmforward-riverbench HERALD=path/to/herald \
#     scripts/bench-peers.sh mysql|postgres [N] [batch] [workers] [rounds]
# PEERS picks the peers (default "minimal watermill river"; River runs on
# PostgreSQL only). HERALD_BEFORE, if set, is a second Herald build run in
# the same rounds (before/after a change). HERALD_MODES lists the Herald
# lanes to run after each peer (default "poll"): poll, log (a log lane
# marking delivered rows), log-delete (deleting them) and log-messages
# (events written with pg_logical_emit_message; PostgreSQL); log lanes need
# a database with its log on (docs/loglanes.md). The peers create their own
# tables in the "peers" database; Herald drops and recreates the table
# HERALD_TABLE names (default herald_bench; give each concurrent run its
# own) in the database HERALD_DSN names (default: test).
set -euo pipefail
kind=${1:?mysql or postgres}; n=${2:-100000}; b=${3:-1000}; w=${4:-2}; rounds=${5:-3}
: "${PEERS_BIN:?directory holding the built peer programs}"
herald=${HERALD:-herald}
peers=${PEERS:-minimal watermill river}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
export MYSQL_DSN=${MYSQL_DSN:-root@tcp(127.0.0.1:3306)/peers}
export PG_DSN=${PG_DSN:-postgres://postgres@127.0.0.1:5432/peers?sslmode=disable}
cfg=$(mktemp --suffix .yaml); out=$(mktemp); work=$(mktemp -d)
trap 'rm -rf "$cfg" "$out" "$work"' EXIT
if [ "$kind" = mysql ]; then
  driver=mysql; dsn=${HERALD_DSN:-root@tcp(127.0.0.1:3306)/test}
else
  driver=postgres; dsn=${HERALD_DSN:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
fi
cat >"$cfg" <<YAML
store: {driver: $driver, dsn: "$dsn"}
brokers:
  nats: {type: nats, url: "$NATS_URL", stream: HERALDBENCH, subjects: ["heraldbench.>"], create_stream: true}
lanes:
  - {name: bench, table: ${HERALD_TABLE:-herald_bench}, broker: nats, destination: "heraldbench.{topic}"}
YAML
rate() { grep -o 'events_per_s=[0-9.]*\|jobs_per_s=[0-9.]*' | head -1 | cut -d= -f2; }
modes=${HERALD_MODES:-poll}
mode_flags() {
  case $1 in
  poll) ;;
  log) echo --source log ;;
  log-delete) echo --source log --on-delivered delete ;;
  log-messages) echo --source log --write messages ;;
  *) echo "bench-peers: unknown Herald mode $1" >&2; return 2 ;;
  esac
}
for m in $modes; do mode_flags "$m" >/dev/null; done
# herald_rate BIN MODE prints the drain rate and the store limit.
herald_rate() {
  # shellcheck disable=SC2046 # the mode's flags are words
  "$1" --config "$cfg" bench throughput --events "$n" --batch "$b" --workers "$w" --runs 1 --json $(mode_flags "$2") |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print(int(j["Broker"]), int(j["Limit"]))'
}
peer_rate() {
  case $1 in
  minimal) "$PEERS_BIN/naiverelay" -db "$kind" -mode drain -n "$n" -w "$w" -b "$b" ;;
  watermill) "$PEERS_BIN/wmforward" -db "$kind" -mode drain -n "$n" ;;
  river) "$PEERS_BIN/riverbench" -mode drain -work nats -n "$n" -workers 2000 -cooldown 10ms ;;
  esac 2>/dev/null | rate
}
cd "$work"
for r in $(seq "$rounds"); do
  for p in $peers; do
    [ "$p" = river ] && [ "$kind" != postgres ] && continue
    echo "$r $p $(peer_rate "$p")" | tee -a "$out"
    # Herald right after each peer: each ratio compares neighbouring runs.
    for who in herald before; do
      bin=$herald; [ $who = before ] && bin=${HERALD_BEFORE:-}
      [ -n "$bin" ] || continue
      for m in $modes; do
        name=$who; [ "$m" = poll ] || name=$who:$m
        read -r rate limit < <(herald_rate "$bin" "$m")
        echo "$r $name/$p $rate" | tee -a "$out"
        echo "$r $name-limit $limit" | tee -a "$out"
      done
    done
  done
done
python3 - "$out" "$kind" "$n" "$b" "$w" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r, name, v = line.split()
    runs[name][r] = float(v)
kind, n, b, w = sys.argv[2:]
print(f"== {kind} N={n} batch={b} workers={w}: medians (events/s) and Herald's ratios")
whos = list(dict.fromkeys(k.split("/")[0] for k in runs if "/" in k))
for who in whos:
    lim = runs.get(f"{who}-limit")
    if lim:
        print(f"{who:7} store limit (no-op publisher): median {statistics.median(lim.values()):9.0f}")
for name in [k for k in runs if "/" not in k and "-limit" not in k]:
    for who in whos:
        mine = runs.get(f"{who}/{name}")
        if not mine:
            continue
        per = [mine[r] / runs[name][r] for r in mine if runs[name].get(r)]
        print(f"{who:7} vs {name:9}: {statistics.median(mine.values()):9.0f} vs "
              f"{statistics.median(runs[name].values()):9.0f}  median ratio {statistics.median(per):5.2f}"
              f"  (rounds: {' '.join(f'{x:.2f}' for x in per)})")
PY
