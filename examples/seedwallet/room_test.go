package seedwallet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/examples/seedwallet"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// Rule: the room service's outboxes are relayed as they are: every room
// event published and marked delivered in the room table's own status
// column; on the robot lane, robot events younger than its discard_after
// are published and older ones deleted unpublished, on SQLite, MariaDB and
// PostgreSQL.
func TestAdoptRoomRobotLane(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t)
			room, robot := roomTable(t, s, "room_outbox"), roomTable(t, s, "robot_outbox")
			now := time.Now().UnixMilli()
			rooms := insertRoomRows(t, s, room, "RoomEntered", 10, now)
			fresh := insertRoomRows(t, s, robot, "RobotGiftShown", 5, now)
			stale := insertRoomRows(t, s, robot, "RobotGiftShownLate", 5, now-10*time.Minute.Milliseconds())
			pub := memory.New(memory.Config{})
			stop := run(t, relayOf(t, s, seedwallet.RoomLanes(room, robot, pub, time.Minute)...).Run)
			testenv.WaitFor(t, time.Minute, 10*time.Millisecond, "room and fresh robot rows delivered, stale ones gone", func() bool {
				return countRows(t, s, room, "delivered") == 10 && countRows(t, s, robot, "delivered") == 5 &&
					countRows(t, s, robot, "") == 5
			})
			stop()
			for _, id := range append(rooms, fresh...) {
				if n := pub.Count(id); n != 1 {
					t.Errorf("[published] %s %d times, want once", id, n)
				}
			}
			for _, id := range stale {
				if n := pub.Count(id); n != 0 {
					t.Errorf("[discarded] stale robot event %s published %d times", id, n)
				}
			}
		})
	}
}

// roomTable creates a room service outbox, dropped when the test ends.
func roomTable(t *testing.T, s store.Store, prefix string) string {
	table := testenv.Name(prefix)
	for _, q := range seedwallet.RoomTableDDL(s.Dialect().Name, table) {
		if _, err := s.DB().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = s.DB().Exec("DROP TABLE " + table) })
	return table
}

// insertRoomRows writes n rows of type typ created at createdMs, as the
// room service does, and returns their ids.
func insertRoomRows(t *testing.T, s store.Store, table, typ string, n int, createdMs int64) []string {
	q := s.Dialect().Rebind("INSERT INTO " + table + ` (app_code, event_id, event_type, room_id, payload_json, created_at_ms)
VALUES ('voice', ?, ?, ?, ?, ?)`)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%s-%d", table, typ, i)
		if _, err := s.DB().Exec(q, ids[i], typ, fmt.Sprintf("room-%d", i%3), `{"robot":"r1","gift":"rose"}`, createdMs); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// countRows counts table's rows in status, or all of them for "".
func countRows(t *testing.T, s store.Store, table, status string) int {
	q, args := "SELECT COUNT(*) FROM "+table, []any{}
	if status != "" {
		q, args = s.Dialect().Rebind(q+" WHERE status = ?"), []any{status}
	}
	var n int
	if err := s.DB().QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
