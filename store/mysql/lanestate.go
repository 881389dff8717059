package mysql

import (
	"context"
	"fmt"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

var _ store.LaneStater = (*Store)(nil)

// LaneStates returns every lane's row of herald_lane_state.
func (s *Store) LaneStates(ctx context.Context) (map[string]store.LaneState, error) {
	return sqlscan.LaneStates(ctx, s.db, "mysql store")
}

// SetLanePaused pauses or resumes lane; pausing a paused lane keeps its
// paused_at. MySQL applies SET assignments left to right on the updated
// row, so paused_at is decided before paused changes.
func (s *Store) SetLanePaused(ctx context.Context, lane string, paused bool) error {
	_, err := s.exec(ctx, `INSERT INTO herald_lane_state (lane, paused, paused_at)
VALUES (?, ?, IF(?, UTC_TIMESTAMP(6), NULL))
ON DUPLICATE KEY UPDATE
  paused_at = IF(NOT VALUES(paused), NULL, IF(paused, paused_at, VALUES(paused_at))),
  paused = VALUES(paused)`, lane, paused, paused)
	if err != nil {
		return fmt.Errorf("mysql store: pause %s: %w", lane, err)
	}
	return nil
}

// SetBrokerState records r for every lane of lanes; broker_since is set
// before broker_up changes (assignments apply left to right).
func (s *Store) SetBrokerState(ctx context.Context, lanes []string, r store.BrokerReport) error {
	for _, lane := range lanes {
		_, err := s.exec(ctx, `INSERT INTO herald_lane_state
  (lane, broker, broker_up, broker_since, broker_error, broker_node) VALUES (?, ?, ?, UTC_TIMESTAMP(6), ?, ?)
ON DUPLICATE KEY UPDATE
  broker_since = IF(broker_up = VALUES(broker_up) AND broker_since IS NOT NULL, broker_since, VALUES(broker_since)),
  broker = VALUES(broker), broker_up = VALUES(broker_up), broker_error = VALUES(broker_error),
  broker_node = VALUES(broker_node)`, lane, r.Broker, r.Up, sqlbuild.TrimError(r.Error), r.Node)
		if err != nil {
			return fmt.Errorf("mysql store: broker state of lane %s: %w", lane, err)
		}
	}
	return nil
}
