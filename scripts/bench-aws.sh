#!/usr/bin/env bash
# `herald bench throughput` to the AWS brokers' test servers, beside NATS
# JetStream at 127.0.0.1:4222 in the same script: SQS (a standard queue) and
# SNS (a standard topic fanning out to a queue, raw delivery) on fauxqs,
# Kinesis (a stream of 4 shards) on kinesalite, both from .tools/ as .ci/run
# installs them and started here on free loopback ports; the store is a
# fresh SQLite file per broker. Prints each broker's `herald bench` medians.
# Usage:
#   scripts/bench-aws.sh [events] [runs] [batch] [workers]
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-5000}; runs=${2:-3}; batch=${3:-100}; workers=${4:-2}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/herald" ./cmd/herald
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME LAUNCHER: run an emulator with node on a free port, setting
# $port (not in a subshell: its pid must reach the cleanup).
start() {
  port=$(free_port)
  PACKAGE="$PWD/.tools/$1/node_modules/$1" PORT=$port node --input-type=module -e "$2" >"$work/$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do grep -q listening "$work/$1.log" && return; sleep 0.1; done
  echo "bench-aws: $1 did not start: $(cat "$work/$1.log")" >&2; exit 1
}
start fauxqs "
const { pathToFileURL } = await import('node:url');
const { buildApp } = await import(pathToFileURL(process.env.PACKAGE + '/dist/app.js').href);
const app = buildApp({ logger: false });
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
console.log('listening');"
fauxqs=$port
start kinesalite "
const { createRequire } = await import('node:module');
const kinesalite = createRequire(process.env.PACKAGE + '/')(process.env.PACKAGE);
kinesalite({createStreamMs: 0}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'));"
kinesalite=$port

# The emulators check that a request is signed, not the signature.
auth='Authorization: AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/x/aws4_request, SignedHeaders=host, Signature=0'
json() { curl -sf -X POST "http://127.0.0.1:$1/" -H "$auth" -H "X-Amz-Date: 20260101T000000Z" -H "Content-Type: application/x-amz-json-$2" -H "X-Amz-Target: $3" -d "$4"; }
query() { curl -sf -X POST "http://127.0.0.1:$fauxqs/" -H "$auth" -H 'Content-Type: application/x-www-form-urlencoded' -d "$1"; }
json "$fauxqs" 1.0 AmazonSQS.CreateQueue '{"QueueName":"herald-bench"}' >/dev/null
json "$fauxqs" 1.0 AmazonSQS.CreateQueue '{"QueueName":"herald-bench-sns"}' >/dev/null
topic=$(query 'Action=CreateTopic&Name=herald-bench' | grep -o 'arn:aws:sns:[^<]*')
query "Action=Subscribe&TopicArn=$topic&Protocol=sqs&Endpoint=arn:aws:sqs:us-east-1:000000000000:herald-bench-sns&Attributes.entry.1.key=RawMessageDelivery&Attributes.entry.1.value=true" >/dev/null
json "$kinesalite" 1.1 Kinesis_20131202.CreateStream '{"StreamName":"herald-bench","ShardCount":4}' >/dev/null

aws_keys="region: us-east-1, access_key_id: test, secret_access_key: test"
declare -A entry dest
entry[nats]="{type: nats, url: \"nats://127.0.0.1:4222\", stream: HERALD_BENCH_AWS, subjects: [\"herald-bench-aws.>\"], create_stream: true}"
dest[nats]="herald-bench-aws.{topic}"
entry[sqs]="{type: sqs, endpoint: \"http://127.0.0.1:$fauxqs\", $aws_keys}"; dest[sqs]="herald-bench"
entry[sns]="{type: sns, endpoint: \"http://127.0.0.1:$fauxqs\", $aws_keys}"; dest[sns]="$topic"
entry[kinesis]="{type: kinesis, endpoint: \"http://127.0.0.1:$kinesalite\", $aws_keys}"; dest[kinesis]="herald-bench"
for b in nats sqs sns kinesis; do
  mkdir -p "$work/$b"
  cat >"$work/$b/herald.yaml" <<EOF
store: {driver: sqlite, dsn: $work/$b/h.db}
brokers:
  events: ${entry[$b]}
lanes:
  - {name: main, table: herald_bench, broker: events, destination: "${dest[$b]}"}
EOF
  echo "== $b (events $events, runs $runs, batch $batch, workers $workers)"
  "$work/herald" bench throughput --config "$work/$b/herald.yaml" --events "$events" --runs "$runs" \
    --batch "$batch" --workers "$workers"
done
