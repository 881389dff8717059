package seedwallet_test

import (
	"context"
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
// are published and older ones deleted unpublished, and retention deletes
// the delivered robot rows from the mapped table (room rows, without
// retention, stay), on SQLite, MariaDB and PostgreSQL.
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
			lanes := seedwallet.RoomLanes(room, robot, pub, time.Minute)
			// Delivered robot rows are aged by their claim's lease: a short
			// one, and a short horizon, let retention take them in seconds.
			lanes[1].PublishTimeout, lanes[1].Lease = time.Second, 2*time.Second
			lanes[1].Retention.Delivered, lanes[1].Retention.Interval = time.Millisecond, 100*time.Millisecond
			r := relayOf(t, s, lanes...)
			// Herald's own tables beside the mapped ones (the retention lock),
			// as `herald run` migrates them; the mapped tables stay as they are.
			if err := s.Migrate(context.Background(), robot); err != nil {
				t.Fatal(err)
			}
			stop := run(t, r.Run)
			testenv.WaitFor(t, time.Minute, 10*time.Millisecond, "room rows delivered, robot rows published or discarded, then cleaned up", func() bool {
				return countRows(t, s, room, "delivered") == 10 && countRows(t, s, robot, "") == 0 &&
					pub.Count(fresh[len(fresh)-1]) == 1
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
