#!/usr/bin/env bash
# Drain N events of 1 KiB with Herald (`herald bench throughput`, broker column)
# and with a minimal reference relay, alternately, R rounds, and print each rate
# and the median ratio. Usage:
#   MINIMAL_RELAY=/path/to/naiverelay HERALD=/path/to/herald \
#     scripts/bench-vs-minimal.sh mysql|postgres [N] [batch] [workers] [rounds]
# The minimal relay must accept `-db mysql|postgres -mode drain -n N -w W -b B`
# and print `events_per_s=<rate>` (MYSQL_DSN / PG_DSN / NATS_URL as set below).
# Both use the NATS server at $NATS_URL (default nats://127.0.0.1:4222), on
# separate streams. Herald's table is herald_bench in the database its config names.
set -euo pipefail
kind=${1:?mysql or postgres}; n=${2:-100000}; b=${3:-1000}; w=${4:-2}; rounds=${5:-3}
: "${MINIMAL_RELAY:?path of the minimal relay binary}"
herald=${HERALD:-herald}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
export MYSQL_DSN=${MYSQL_DSN:-root@tcp(127.0.0.1:3306)/peers}
export PG_DSN=${PG_DSN:-postgres://postgres@127.0.0.1:5432/peers?sslmode=disable}
cfg=$(mktemp --suffix .yaml)
trap 'rm -f "$cfg"' EXIT
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
  - {name: bench, table: herald_bench, broker: nats, destination: "heraldbench.{topic}"}
YAML
rate() { grep -o 'events_per_s=[0-9]*' | head -1 | cut -d= -f2; }
ratios=()
for r in $(seq "$rounds"); do
  m=$("$MINIMAL_RELAY" -db "$kind" -mode drain -n "$n" -w "$w" -b "$b" 2>/dev/null | rate)
  read -r h lim < <("$herald" --config "$cfg" bench throughput --events "$n" --batch "$b" --workers "$w" --runs 1 --json |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print(int(j["Broker"]), int(j["Limit"]))')
  ratio=$(python3 -c "print(round($h/$m, 3))")
  ratios+=("$ratio")
  echo "$kind b=$b w=$w round $r: minimal $m herald $h ratio $ratio (herald's no-op store limit $lim)"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print "median ratio", a[int((NR+1)/2)]}'
