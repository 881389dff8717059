#!/usr/bin/env bash
# Mutation check of Herald's core promises (docs/testing.md). Each mutant is
# a one-line change to the code that keeps a promise; it is applied to a copy
# of this working tree, the tests meant to catch it are run there, and each
# mutant must make them fail. Before the mutants, the same tests must pass on
# the unchanged copy (else a failure would prove nothing). A mutant whose
# anchor line is missing or not unique (the code moved) or that does not
# compile stops the run: nothing is silently left untested.
#
# Usage: scripts/mutants.sh [NAME...]      (default: every mutant; -l lists them)
# MUTANTS_RACE=1 runs the tests with -race (slower); MUTANTS_KEEP=1 keeps the
# copy. Needs the servers of docs/testing.md (CI=true: a missing one fails).
# Exit status: 0 when every mutant was caught, 1 otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export CI=true

names=() promises=() files=() anchors=() repls=() pkgs=() runs=()
# mutant NAME PROMISE FILE ANCHOR REPLACEMENT PACKAGE RUN: ANCHOR is text
# found on exactly one line of FILE; that occurrence becomes REPLACEMENT
# (which may add a line); `go test -run RUN PACKAGE` must then fail.
mutant() {
  names+=("$1") promises+=("$2") files+=("$3") anchors+=("$4") repls+=("$5") pkgs+=("$6") runs+=("$7")
}

mutant claim-not-exclusive "no duplicate while a lease is live (three relays, counted on the wire)" \
  store/postgres/claim.go ' LIMIT ? FOR UPDATE SKIP LOCKED"' ' LIMIT ?"' \
  ./internal/cli '^TestScaleOutThreeRelays$/^postgres$'
mutant failure-marked-delivered "no loss: a failed publish is never marked delivered" \
  relay/batch.go '} else if results[j].Err != nil {' '} else if false && results[j].Err != nil {' \
  ./relay '^(TestRetryWaitsForBackoff|TestAmbiguousFailureIsRetried|TestDeadAfterMaxAttempts)$'
mutant enqueue-commits "no rolled-back event: an enqueue lives and dies with the caller's transaction" \
  outbox.go $'\tsignalWakeup(o.table)' $'\tif c, ok := tx.(interface{ Commit() error }); ok { _ = c.Commit() }; signalWakeup(o.table)' \
  ./examples/giftwall '^TestDebitGiftRollbackLeavesNoEvent$'
mutant key-gate-open "per-key order: a key's later rows wait behind its failed one" \
  relay/batch.go 'if b.items[q[0]].outcome == delivered && len(q) > 1 {' 'if len(q) > 1 {' \
  ./relay '^TestPerKeyOrderUnderInjectedFailures$'
mutant fence-ignores-token "fencing: a mark under a lost lease changes nothing" \
  store/sqlite/mark.go "const fenced = \` AND o.lease_token = ? AND o.status = 'in_flight'\`" \
  "const fenced = \` AND (o.lease_token = ? OR 1) AND o.status = 'in_flight'\`" \
  ./store/sqlite '^TestConformance$/^Lease$'
mutant expired-lease-kept "lease takeover: a row whose lease ran out is claimed again" \
  store/sqlite/claim.go "WHERE o.status IN ('pending', 'in_flight') AND o.available_at <= " \
  "WHERE o.status IN ('pending') AND o.available_at <= " \
  ./relay '^TestExpiredLeaseIsTakenOverAndFenced$'
mutant log-lease-longer "lease takeover: a log lane's reader holds the lane's lease, so a standby takes over within lease + lease/4 + 1 s" \
  relay/loglane.go 'Lease: lane.Lease})' 'Lease: 4 * lane.Lease})' \
  ./internal/cli '^TestLogicalRelayKilledStandbyTakesOver$'
mutant breaker-charges-attempt "the breaker costs no attempt: an unanswered round is released, not failed" \
  relay/batch.go 'it.outcome, it.err = unpublished, results[j].Err' 'it.outcome, it.err = failed, results[j].Err' \
  ./relay '^TestBrokerStateIsStored$'
mutant release-keeps-attempt "the breaker costs no attempt: a release gives the claim's attempt back (attempts on the rows)" \
  store/sqlite/mark.go 'attempts = MAX(attempts - 1, 0)' 'attempts = attempts' \
  ./integration/relay '^(TestBrokerDownAtStartNATS|TestBrokerDownNATS)$'
mutant projection-reapplies-done "projection exactly once: a done event is not applied again" \
  store/internal/projsql/projsql.go 'case store.ProjectionDone, store.ProjectionDead:' 'case store.ProjectionDead:' \
  ./projector '^TestFiveConcurrentDeliveries$'
mutant record-before-settle "log position never past an unpublished event: a batch is recorded once settled" \
  relay/logpublish.go $'\t\t<-j.done' $'\t\t// mutant: not waiting for the batch to settle' \
  ./relay '^TestLogLaneRecordsOnlyPastSettledBatches$'
mutant record-after-failure "log position never past an unpublished event: nothing is recorded after a failed hand-over" \
  relay/logpublish.go $'\t\tcase err != nil:' $'\t\tcase false:' \
  ./relay '^TestLogLaneRecordsNothingAfterAFailedHandOver$'
mutant postgres-unbounded "a relay frozen inside its claim transaction on PostgreSQL loses its rows within the bound" \
  store/postgres/claim.go "set_config('idle_in_transaction_session_timeout', \$1, true)" "set_config('herald.no_bound', \$1, true)" \
  ./internal/cli '^TestFrozenClaimReleasesItsRows$/^postgres$'
mutant no-wakeup "an idle relay is woken by an enqueue in its process, not its next look" \
  outbox.go $'\tsignalWakeup(o.table)' $'\t_ = o.table // mutant: no wakeup' \
  ./relay '^TestInProcessWakeupBeatsPollInterval$'
mutant rmqfake-v2-field "rmqfake reads SEND_MESSAGE_V2 as the official client writes it" \
  broker/rocketmq/rmqfake/broker.go '"g": "bornTimestamp"' '"h": "bornTimestamp"' \
  ./broker/rocketmq/rmqfake '^TestGoldenSendV2Frame$'

if [ "${1:-}" = -l ]; then
  for i in "${!names[@]}"; do printf '%-26s %s\n' "${names[$i]}" "${promises[$i]}"; done
  exit 0
fi
selected=()
for i in "${!names[@]}"; do
  if [ $# -eq 0 ] || [[ " $* " == *" ${names[$i]} "* ]]; then selected+=("$i"); fi
done
[ ${#selected[@]} -gt 0 ] || { echo "mutants: no mutant named $*; -l lists them" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/herald-mutants.XXXXXX")
[ "${MUTANTS_KEEP:-}" = 1 ] || trap 'rm -rf "$work"' EXIT
tar -C "$root" --exclude=./.git -cf - . | tar -C "$work" -xf -
cd "$work"
race=(); [ "${MUTANTS_RACE:-}" = 1 ] && race=(-race)
log=$work/.mutants-log

# gotest PKG RUN: runs the tests quietly; prints how many ran; fails when
# one failed (the output is kept in $log).
gotest() {
  local status=0
  go test "${race[@]}" -count=1 -timeout 15m -v -run "$2" "$1" >"$log" 2>&1 || status=$?
  grep -c -- '^--- \(PASS\|FAIL\)' "$log" || true
  return $status
}

echo "mutants: baseline (the catching tests on the unchanged tree)"
declare -A checked=()
for i in "${selected[@]}"; do
  key="${pkgs[$i]} ${runs[$i]}"
  [ -z "${checked[$key]:-}" ] || continue
  checked[$key]=1
  start=$SECONDS
  if ! ran=$(gotest "${pkgs[$i]}" "${runs[$i]}"); then
    echo "mutants: baseline FAILED: go test -run '${runs[$i]}' ${pkgs[$i]}:"; tail -40 "$log"; exit 1
  fi
  if [ "$ran" -eq 0 ]; then
    echo "mutants: -run '${runs[$i]}' matches no test in ${pkgs[$i]}"; exit 1
  fi
  printf '  pass   %-50s %3d tests %4ds\n' "${pkgs[$i]} ${runs[$i]}" "$ran" $((SECONDS - start))
done

survived=0
echo "mutants: each mutant must be caught"
for i in "${selected[@]}"; do
  f=${files[$i]}
  n=$(grep -cF -- "${anchors[$i]}" "$f" || true)
  if [ "$n" != 1 ]; then
    echo "mutants: ${names[$i]}: the anchor is on $n lines of $f, want 1 (the code moved; update the mutant):"
    echo "  ${anchors[$i]}"
    exit 1
  fi
  cp "$f" "$work/.orig"
  A=${anchors[$i]} R=${repls[$i]} awk '{ i = index($0, ENVIRON["A"]); if (i) $0 = substr($0, 1, i - 1) ENVIRON["R"] substr($0, i + length(ENVIRON["A"])); print }' \
    "$work/.orig" >"$f"
  start=$SECONDS
  if ! go test "${race[@]}" -count=1 -run '^$' "${pkgs[$i]}" >"$log" 2>&1; then
    echo "mutants: ${names[$i]} does not compile:"; tail -20 "$log"; exit 1
  fi
  if gotest "${pkgs[$i]}" "${runs[$i]}" >/dev/null; then
    result=SURVIVED; survived=$((survived + 1))
  else
    result=caught
  fi
  cp "$work/.orig" "$f"
  printf '  %-8s %-26s %4ds  %s -run %s\n' "$result" "${names[$i]}" $((SECONDS - start)) "${pkgs[$i]}" "${runs[$i]}"
  if [ "$result" = caught ]; then
    grep -m 3 -E '^\s+\S+\.go:[0-9]+: ' "$log" | cut -c1-220 | sed 's/^\s*/             /' || true
  fi
done
echo "mutants: ${#selected[@]} run, $((${#selected[@]} - survived)) caught, $survived survived"
[ "$survived" -eq 0 ]
