#!/usr/bin/env bash
# `herald bench throughput` against Pub/Sub (pstest served by
# internal/pstestd), MQTT (the machine's mosquitto on 1883) and NATS (the
# machine's server on 4222) from one SQLite store, the brokers taking turns
# in each of R rounds; prints every run and each broker's medians (events/s
# to the broker, the store's no-op limit, their ratio). Usage:
#   scripts/bench-brokers.sh [events] [rounds] [batch]
set -euo pipefail
n=${1:-20000}; rounds=${2:-3}; batch=${3:-1000}
work=$(mktemp -d); out=$work/runs
pstestd_pid=""
trap '[ -n "$pstestd_pid" ] && kill "$pstestd_pid"; rm -rf "$work"' EXIT
go build -o "$work/herald" ./cmd/herald
go build -o "$work/pstestd" ./internal/pstestd
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$work/pstestd" -addr "127.0.0.1:$port" -project herald -topics herald-bench >"$work/pstestd.log" 2>&1 &
pstestd_pid=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
config() { # config NAME BROKER-YAML DESTINATION
  cat >"$work/$1.yaml" <<YAML
store: {driver: sqlite, dsn: $work/bench.db, synchronous: normal}
brokers:
  b: $2
lanes:
  - {name: bench, table: herald_bench, broker: b, destination: "$3"}
YAML
}
config nats '{type: nats, url: "nats://127.0.0.1:4222", stream: HERALDBENCH, subjects: ["heraldbench.>"], create_stream: true}' 'heraldbench.{topic}'
config pubsub "{type: pubsub, project: herald, emulator_host: \"127.0.0.1:$port\"}" 'herald-bench'
config mqtt '{type: mqtt, url: "tcp://127.0.0.1:1883"}' 'herald-bench/{topic}'
for r in $(seq "$rounds"); do
  for b in nats pubsub mqtt; do
    res=$("$work/herald" bench throughput --config "$work/$b.yaml" --events "$n" --runs 1 --batch "$batch" --json)
    echo "$r $b $(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["Broker"], d["Limit"])' <<<"$res")" | tee -a "$out"
  done
done
python3 - "$out" "$n" "$batch" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, name, broker, limit = line.split()
    runs[name].append((float(broker), float(limit)))
print(f"medians, {sys.argv[2]} events of 1 KiB, batch {sys.argv[3]}, 2 workers, SQLite:")
for name, v in runs.items():
    b = statistics.median(x[0] for x in v); l = statistics.median(x[1] for x in v)
    print(f"  {name:7} broker {b:8.0f} events/s   no-op limit {l:8.0f} events/s   ratio {b/l:.2f}")
PY
