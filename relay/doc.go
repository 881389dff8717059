// Package relay moves events from outbox tables to brokers: per lane, N
// workers claim batches under a lease, publish them, and mark each row
// delivered, retried with backoff, or dead.
//
// # A worker's loop
//
//  1. Claim up to batch_size rows under a fresh fencing token, with a lease
//     of lease (default 3 × publish_timeout) on the database clock.
//  2. Delete rows older than discard_after (stale: a late event is worse
//     than none) instead of publishing them.
//  3. Check each row before publishing (check.go): a row that no retry can
//     fix (written by plain SQL with an empty event_id, topic or event_type,
//     an empty field the destination uses, headers that are not a JSON
//     object of strings, a payload over the lane's max_payload or the
//     broker's limit) is marked dead unpublished, with a reason saying why.
//  4. Publish the rest in one batch under publish_timeout, on a context
//     detached from shutdown so a SIGTERM never cuts a publish short. On
//     ordered lanes the batch goes out in rounds (the first row of every key,
//     then the second, …), and a key whose row failed has its later rows
//     released, so retries never overtake.
//  5. Mark the outcomes: delivered rows in one statement with the broker's
//     receipt, failed rows retried after backoff (exponential, capped,
//     jittered, or the broker's Retry-After), dead after max_attempts or at
//     once on a permanent error. Rows the store reports as lost (the lease
//     ran out and another worker took them) are left alone.
//  6. A full batch loops at once; otherwise the worker waits for a wakeup
//     (an Enqueue in this process, a NOTIFY from the database) or the next
//     poll, polling quickly right after activity and backing off to
//     poll_interval when idle.
//
// Claiming, publishing and marking overlap: a worker is a pipeline with one
// batch in each stage, so the database and the broker work at the same time.
//
// # Outages
//
// A broker that is not there is the lane's state, not the events' fault.
// Lanes given the same Publisher share a breaker. A publish round whose
// results are all herald.Unavailable (no answer about any event) opens it:
// the lanes stop claiming and release what they hold with the attempts
// given back, one worker at a time probes with one event (or a
// broker.Pinger ping) under a capped backoff, and the first answer closes
// it. The outage is logged once each way and shown by Health; attempts,
// backoff and dead letters are for answers about an event. A lane paused
// in herald_lane_state (store.LaneStater) claims nothing.
//
// On shutdown a worker stops claiming, lets its in-flight publish finish
// within publish_timeout, marks the outcomes and releases every claimed row
// it did not publish, so another relay can take them at once.
package relay
