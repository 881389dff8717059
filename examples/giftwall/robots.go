package giftwall

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/heraldhq/herald"
)

// Robot event type and topic.
const (
	RobotGiftShown = "RobotGiftShown"
	TopicRobot     = "robot"
)

// Robots writes robot display events (a robot "sending" a gift animation to
// liven up a room) to their own table and lane. They are low value and
// perishable: the robot lane discards them once older than its
// discard_after instead of publishing a stale animation, and its retention
// cleans delivered rows up.
type Robots struct {
	db     *sql.DB
	outbox *herald.Outbox
}

// RobotShow is the payload of RobotGiftShown.
type RobotShow struct {
	RoomID  string `json:"room_id"`
	RobotID string `json:"robot_id"`
	GiftID  string `json:"gift_id"`
}

// Show enqueues a RobotGiftShown event.
func (r *Robots) Show(ctx context.Context, tenant, room, robot, gift string) error {
	payload, err := json.Marshal(RobotShow{RoomID: room, RobotID: robot, GiftID: gift})
	if err != nil {
		return err
	}
	return inTx(ctx, r.db, func(tx *sql.Tx) error {
		// No partition key: robot shows are independent of each other and
		// of the room's order, so none waits for another's retry.
		return r.outbox.Enqueue(ctx, tx, herald.Event{Tenant: tenant, Topic: TopicRobot, Type: RobotGiftShown,
			Payload: payload})
	})
}
