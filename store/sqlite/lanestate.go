package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/heraldhq/herald/store"
)

var _ store.LaneStater = (*Store)(nil)

// LaneStates returns every lane's row of herald_lane_state.
func (s *Store) LaneStates(ctx context.Context) (map[string]store.LaneState, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT lane, paused, paused_at, broker, broker_up, broker_since,
	broker_error, broker_node FROM herald_lane_state`)
	if err != nil {
		return nil, wrap("lane states", "herald_lane_state", err)
	}
	defer rows.Close()
	out := map[string]store.LaneState{}
	for rows.Next() {
		var st store.LaneState
		var pausedAt, since sql.NullInt64
		if err := rows.Scan(&st.Lane, &st.Paused, &pausedAt, &st.Broker, &st.BrokerUp, &since,
			&st.BrokerError, &st.Node); err != nil {
			return nil, wrap("lane states", "herald_lane_state", err)
		}
		st.PausedAt, st.BrokerSince = millis(pausedAt), millis(since)
		out[st.Lane] = st
	}
	return out, wrap("lane states", "herald_lane_state", rows.Err())
}

func millis(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64)
}

// SetLanePaused pauses or resumes lane; pausing a paused lane keeps its
// paused_at.
func (s *Store) SetLanePaused(ctx context.Context, lane string, paused bool) error {
	return wrap("pause", lane, s.write(ctx, func() error {
		_, err := s.db.ExecContext(ctx, `INSERT INTO herald_lane_state (lane, paused, paused_at)
VALUES (?1, ?2, CASE WHEN ?2 THEN `+now+` END)
ON CONFLICT (lane) DO UPDATE SET
	paused_at = CASE WHEN NOT excluded.paused THEN NULL WHEN herald_lane_state.paused THEN herald_lane_state.paused_at
	            ELSE excluded.paused_at END,
	paused = excluded.paused`, lane, paused)
		return err
	}))
}

// SetBrokerState records r for every lane of lanes.
func (s *Store) SetBrokerState(ctx context.Context, lanes []string, r store.BrokerReport) error {
	return wrap("broker state", r.Broker, s.write(ctx, func() error {
		for _, lane := range lanes {
			_, err := s.db.ExecContext(ctx, `INSERT INTO herald_lane_state
	(lane, broker, broker_up, broker_since, broker_error, broker_node) VALUES (?1, ?2, ?3, `+now+`, ?4, ?5)
ON CONFLICT (lane) DO UPDATE SET
	broker_since = CASE WHEN herald_lane_state.broker_up = excluded.broker_up AND herald_lane_state.broker_since IS NOT NULL
	               THEN herald_lane_state.broker_since ELSE excluded.broker_since END,
	broker = excluded.broker, broker_up = excluded.broker_up, broker_error = excluded.broker_error,
	broker_node = excluded.broker_node`, lane, r.Broker, r.Up, trimError(r.Error), r.Node)
			if err != nil {
				return err
			}
		}
		return nil
	}))
}
