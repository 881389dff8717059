package seedwallet

import (
	"time"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/lane"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// roomColumns are the room outbox's own columns (the robot outbox has the
// same); its worker's bookkeeping is the wallet's.
const roomColumns = `app_code {{TEXT}} NOT NULL, event_id {{KEY}} NOT NULL PRIMARY KEY, event_type {{TEXT}} NOT NULL,
  room_id {{TEXT}} NOT NULL, payload_json {{JSON}} NOT NULL, `

// RoomTableDDL returns the statements that create a room service outbox
// named table (room_outbox, or robot_outbox for its robot lane) as that
// service created it.
func RoomTableDDL(dialect, table string) []string { return outboxDDL(dialect, table, roomColumns) }

// RoomMapping is how Herald reads the room and robot outboxes: keyed by
// room, the wallet's statuses and time unit.
var RoomMapping = store.Mapping{
	Columns: store.Columns{ID: "event_id", Type: "event_type", Tenant: "app_code", Key: "room_id",
		Payload: "payload_json", CreatedAt: "created_at_ms", Status: "status", Attempts: "retry_count",
		NextAttempt: "next_retry_at_ms", LeaseUntil: "lock_until_ms", LeaseOwner: "worker_id", LastError: "last_error"},
	Statuses: Mapping.Statuses, TimeUnit: store.TimeEpochMillis,
}

// RoomLanes relay the room outbox to "room.{event_type}" and the robot
// outbox to "robot.{event_type}" through pub. A robot event older than
// robotTTL is deleted instead of published (a late gift animation is worse
// than none), and delivered robot rows are deleted by retention once
// robotTTL has passed since the claim that delivered them: the robot table
// keeps only what is still worth showing.
func RoomLanes(roomTable, robotTable string, pub broker.Publisher, robotTTL time.Duration) []relay.Lane {
	laneOn := func(name, table string) relay.Lane {
		m := RoomMapping
		return relay.Lane{Name: name, Table: table, Publisher: pub, Destination: broker.MustParseTemplate(name + ".{event_type}"),
			PollInterval: 50 * time.Millisecond, PublishTimeout: 5 * time.Second,
			Columns: m.Columns, Statuses: m.Statuses, TimeUnit: m.TimeUnit}
	}
	robots := laneOn("robot", robotTable)
	robots.DiscardAfter = robotTTL
	robots.Retention = lane.Retention{Delivered: robotTTL, Dead: 24 * time.Hour}
	return []relay.Lane{laneOn("room", roomTable), robots}
}
