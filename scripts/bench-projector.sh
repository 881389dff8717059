#!/usr/bin/env bash
# Herald's exactly-once apply step (`BenchmarkApply`, 8 workers, 32 events
# per transaction) beside the minimal ledger (one multi-row ledger INSERT
# with duplicates ignored, then one read-model upsert per new event, per
# transaction; 8 workers), alternating in each of R rounds; prints every
# run, the medians and Herald's median ratio. Usage:
#   PEERS_BIN=dir-with-minledger scripts/bench-projector.sh mysql|postgres [N] [rounds]
# PROJECTOR_TEST, if set, is a compiled projector test binary to run instead
# of building this tree's (`go test -c ./projector`); PROJECTOR_TEST_BEFORE a
# second one run in the same rounds (before/after a change).
set -euo pipefail
kind=${1:?mysql or postgres}; n=${2:-20000}; rounds=${3:-3}
: "${PEERS_BIN:?directory holding the built peer programs}"
export MYSQL_DSN=${MYSQL_DSN:-root@tcp(127.0.0.1:3306)/peers}
export PG_DSN=${PG_DSN:-postgres://postgres@127.0.0.1:5432/peers?sslmode=disable}
work=$(mktemp -d); out=$work/runs
trap 'rm -rf "$work"' EXIT
herald=${PROJECTOR_TEST:-}
if [ -z "$herald" ]; then
  herald=$work/projector.test
  go test -c -o "$herald" ./projector
fi
apply_rate() {
  "$1" -test.run '^$' -test.bench "^BenchmarkApply\$/^$kind\$/^workers=8\$/^batch=32\$" -test.benchtime "${n}x" |
    grep -o '[0-9.]* events/s' | head -1 | cut -d' ' -f1
}
for r in $(seq "$rounds"); do
  echo "$r minledger $("$PEERS_BIN/minledger" -db "$kind" -n "$n" -w 8 -tx 32 2>/dev/null |
    grep -o 'events_per_s=[0-9.]*' | cut -d= -f2)" | tee -a "$out"
  echo "$r herald $(apply_rate "$herald")" | tee -a "$out"
  if [ -n "${PROJECTOR_TEST_BEFORE:-}" ]; then
    echo "$r before $(apply_rate "$PROJECTOR_TEST_BEFORE")" | tee -a "$out"
  fi
done
python3 - "$out" "$kind" "$n" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r, name, v = line.split()
    runs[name][r] = float(v)
base = runs["minledger"]
print(f"== projector {sys.argv[2]} N={sys.argv[3]}, 8 workers x 32 events per transaction")
for who in ("herald", "before"):
    if who in runs:
        per = [runs[who][r] / base[r] for r in runs[who] if base.get(r)]
        print(f"{who:7} {statistics.median(runs[who].values()):8.0f} vs minledger {statistics.median(base.values()):8.0f} events/s:"
              f" median ratio {statistics.median(per):.2f} (rounds: {' '.join(f'{x:.2f}' for x in per)})")
PY
