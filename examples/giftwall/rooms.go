package giftwall

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// Room event types.
const (
	RoomEntered    = "RoomEntered"
	RoomLeft       = "RoomLeft"
	GiftBroadcast  = "GiftBroadcast"
	RocketIgnited  = "RocketIgnited"
	RocketLaunched = "RocketLaunched"
	TopicRoom      = "room"
)

// Scheduler schedules a rocket's launch event for its AvailableAt. It must
// be idempotent by event id (the relay may run the step again for the same
// ignition) and return only once the launch is durably scheduled.
type Scheduler func(ctx context.Context, launch herald.Event) error

// Rooms writes room events to the room lane, ordered per room (the
// partition key is the room id). It is safe for concurrent use.
type Rooms struct {
	db          *sql.DB
	sql         dialect
	outbox      *herald.Outbox
	launchDelay time.Duration
	schedule    Scheduler
}

func newRooms(db *sql.DB, d dialect, outbox *herald.Outbox, delay time.Duration, s Scheduler) *Rooms {
	r := &Rooms{db: db, sql: d, outbox: outbox, launchDelay: delay, schedule: s}
	if r.schedule == nil {
		r.schedule = r.enqueueLaunch
	}
	return r
}

// RoomEvent is the payload of every room event.
type RoomEvent struct {
	RoomID string `json:"room_id"`
	UserID string `json:"user_id"`
	// GiftID, Count and Receiver: GiftBroadcast.
	GiftID   string `json:"gift_id,omitempty"`
	Count    int64  `json:"count,omitempty"`
	Receiver string `json:"receiver,omitempty"`
	// IgnitionID and LaunchAt (Unix milliseconds): RocketIgnited and
	// RocketLaunched.
	IgnitionID string `json:"ignition_id,omitempty"`
	LaunchAt   int64  `json:"launch_at,omitempty"`
}

// Enter puts a user in a room and enqueues RoomEntered, in one transaction.
func (r *Rooms) Enter(ctx context.Context, tenant, room, user string) error {
	return r.inTx(ctx, func(tx *sql.Tx) error {
		q := r.sql.q(r.sql.insertIgnore("{p}room_members", "tenant, room_id, user_id, entered_at", "tenant, room_id, user_id"))
		if _, err := tx.ExecContext(ctx, q, tenant, room, user, nowMillis()); err != nil {
			return err
		}
		return r.enqueue(ctx, tx, tenant, RoomEntered, RoomEvent{RoomID: room, UserID: user})
	})
}

// Leave takes a user out of a room and enqueues RoomLeft, in one transaction.
func (r *Rooms) Leave(ctx context.Context, tenant, room, user string) error {
	return r.inTx(ctx, func(tx *sql.Tx) error {
		q := r.sql.q("DELETE FROM {p}room_members WHERE tenant = ? AND room_id = ? AND user_id = ?")
		if _, err := tx.ExecContext(ctx, q, tenant, room, user); err != nil {
			return err
		}
		return r.enqueue(ctx, tx, tenant, RoomLeft, RoomEvent{RoomID: room, UserID: user})
	})
}

// BroadcastGift enqueues GiftBroadcast: everyone in the room sees the gift.
func (r *Rooms) BroadcastGift(ctx context.Context, room string, d GiftDebit) error {
	return r.inTx(ctx, func(tx *sql.Tx) error {
		return r.enqueue(ctx, tx, d.Tenant, GiftBroadcast, RoomEvent{RoomID: room, UserID: d.Sender,
			Receiver: d.Receiver, GiftID: d.GiftID, Count: d.Count})
	})
}

// IgniteRocket enqueues RocketIgnited and returns its event id. Its launch
// is scheduled by the room lane's before-publish step (BeforePublish), not
// here: the ignition may be published long after it committed.
func (r *Rooms) IgniteRocket(ctx context.Context, tenant, room, user string) (string, error) {
	id := herald.NewID()
	err := r.inTx(ctx, func(tx *sql.Tx) error {
		payload, err := json.Marshal(RoomEvent{RoomID: room, UserID: user,
			LaunchAt: time.Now().Add(r.launchDelay).UnixMilli()})
		if err != nil {
			return err
		}
		return r.outbox.Enqueue(ctx, tx, herald.Event{ID: id, Tenant: tenant, Topic: TopicRoom,
			Type: RocketIgnited, PartitionKey: room, Payload: payload})
	})
	return id, err
}

// BeforePublish is the room lane's relay.BeforePublish: for a RocketIgnited
// message it schedules the RocketLaunched event before the ignition is
// published. If scheduling fails, the error keeps the ignition retryable
// (and unpublished); the retry schedules the same launch event id, which
// an outbox skips when it has it already, so a launch is never doubled.
func (r *Rooms) BeforePublish(ctx context.Context, m broker.Message) error {
	if m.Event.Type != RocketIgnited {
		return nil
	}
	launch, err := LaunchFor(m.Event)
	if err != nil {
		return herald.Permanent(err) // no retry fixes a bad payload
	}
	if err := r.schedule(ctx, launch); err != nil {
		return fmt.Errorf("schedule rocket launch %s: %w", launch.ID, err)
	}
	return nil
}

// LaunchFor returns the RocketLaunched event of an ignition: its id derived
// from the ignition's (the same ignition always gives the same launch),
// available at the ignition's launch_at.
//
// Its partition key is the room id with "/rocket" appended, not the room
// id: on an ordered lane a delayed event holds back the later events of its
// key until it is due, and a launch due in seconds must not hold up the
// room's other events. Launches of one room stay in order among themselves.
// The price: a launch is not ordered after its ignition. It is scheduled
// before the ignition is published, so it can only come first when the
// ignition's publish fails and its retry comes after the launch time.
func LaunchFor(ignition herald.Event) (herald.Event, error) {
	var p RoomEvent
	if err := json.Unmarshal(ignition.Payload, &p); err != nil || p.RoomID == "" || p.LaunchAt == 0 {
		return herald.Event{}, fmt.Errorf("rocket ignition %s: bad payload (%v)", ignition.ID, err)
	}
	p.IgnitionID = ignition.ID
	payload, err := json.Marshal(p)
	if err != nil {
		return herald.Event{}, err
	}
	return herald.Event{
		ID:     uuid.NewSHA1(launchNamespace, []byte(ignition.ID)).String(),
		Tenant: ignition.Tenant, Topic: TopicRoom, Type: RocketLaunched,
		PartitionKey: p.RoomID + "/rocket", Payload: payload,
		AvailableAt: time.UnixMilli(p.LaunchAt),
	}, nil
}

// launchNamespace scopes the launch ids derived from ignition ids.
var launchNamespace = uuid.MustParse("6f1c2a57-3b0e-4c8e-9a53-6a1d7e0c9b11")

// enqueueLaunch is the default Scheduler: Herald's delayed delivery, the
// launch enqueued into the room table in a transaction of its own.
func (r *Rooms) enqueueLaunch(ctx context.Context, launch herald.Event) error {
	return r.inTx(ctx, func(tx *sql.Tx) error { return r.outbox.Enqueue(ctx, tx, launch) })
}

func (r *Rooms) enqueue(ctx context.Context, tx *sql.Tx, tenant, typ string, p RoomEvent) error {
	payload, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return r.outbox.Enqueue(ctx, tx, herald.Event{Tenant: tenant, Topic: TopicRoom, Type: typ,
		PartitionKey: p.RoomID, Payload: payload})
}

// inTx runs fn in a transaction and commits it.
func (r *Rooms) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return inTx(ctx, r.db, fn)
}

func inTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("giftwall: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		rollback(tx)
		return fmt.Errorf("giftwall: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("giftwall: commit: %w", err)
	}
	return nil
}
