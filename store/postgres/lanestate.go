package postgres

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
	return sqlscan.LaneStates(ctx, s.db, "postgres store")
}

// SetLanePaused pauses or resumes lane; pausing a paused lane keeps its
// paused_at.
func (s *Store) SetLanePaused(ctx context.Context, lane string, paused bool) error {
	_, err := s.exec(ctx, `INSERT INTO herald_lane_state (lane, paused, paused_at)
VALUES ($1, $2, CASE WHEN $2 THEN now() END)
ON CONFLICT (lane) DO UPDATE SET
  paused_at = CASE WHEN NOT EXCLUDED.paused THEN NULL WHEN herald_lane_state.paused THEN herald_lane_state.paused_at
              ELSE EXCLUDED.paused_at END,
  paused = EXCLUDED.paused`, lane, paused)
	if err != nil {
		return fmt.Errorf("postgres store: pause %s: %w", lane, err)
	}
	return nil
}

// SetBrokerState records r for every lane of lanes.
func (s *Store) SetBrokerState(ctx context.Context, lanes []string, r store.BrokerReport) error {
	for _, lane := range lanes {
		_, err := s.exec(ctx, `INSERT INTO herald_lane_state
  (lane, broker, broker_up, broker_since, broker_error, broker_node) VALUES ($1, $2, $3, now(), $4, $5)
ON CONFLICT (lane) DO UPDATE SET
  broker_since = CASE WHEN herald_lane_state.broker_up = EXCLUDED.broker_up AND herald_lane_state.broker_since IS NOT NULL
                 THEN herald_lane_state.broker_since ELSE EXCLUDED.broker_since END,
  broker = EXCLUDED.broker, broker_up = EXCLUDED.broker_up, broker_error = EXCLUDED.broker_error,
  broker_node = EXCLUDED.broker_node`, lane, r.Broker, r.Up, sqlbuild.TrimError(r.Error), r.Node)
		if err != nil {
			return fmt.Errorf("postgres store: broker state of lane %s: %w", lane, err)
		}
	}
	return nil
}
