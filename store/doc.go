// Package store defines the seam between Herald's relay and a database: the
// Store interface, the records it returns and the state machine every
// implementation keeps. All SQL lives in the sub-packages (sqlite, mysql,
// postgres); the relay never asks which database it runs on.
//
// # The outbox row's state machine
//
//	           claim (lease, token, attempts+1)
//	pending ─────────────────────────────────▶ in_flight
//	   ▲  ▲                                      │  │  │
//	   │  └── retry (available_at = now+backoff) ┘  │  │
//	   │  └── release (attempts-1, at once) ────────┘  │
//	   │                                               ├─ complete ─▶ delivered
//	   └──────────── replay (attempts = 0) ── dead ◀───┤ kill (max attempts or permanent)
//	                                                   └─ discard ─▶ (row deleted: stale)
//
// A row is claimable when it is pending and available_at <= now, or when it
// is in_flight and its lease ran out (available_at holds the lease's end while
// in flight, so one index serves both). Every time comes from the database
// clock, in the statement that uses it.
//
// Fencing: each claim writes a fresh random lease token on its rows. Every
// later change (complete, retry, kill, release, discard) names the token and
// changes only rows that still carry it; rows it did not change are reported
// back as lost (another worker has them now), and the caller changes nothing.
//
// Ordered lanes (ClaimParams.Ordered): a row with a partition key is
// claimable only if no earlier row of the same key is in the way: pending but
// not yet available (backing off), in flight under a live lease, or dead when
// ParkOnDead is set. Ready rows of a key are claimed together in id order, so
// the relay publishes them one after another.
package store
