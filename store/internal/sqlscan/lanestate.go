package sqlscan

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/heraldhq/herald/store"
)

// LaneStates reads every row of herald_lane_state from a database whose
// driver scans timestamps into time.Time (MySQL with parseTime, PostgreSQL).
// name prefixes errors ("mysql store").
func LaneStates(ctx context.Context, db *sql.DB, name string) (map[string]store.LaneState, error) {
	rows, err := db.QueryContext(ctx, `SELECT lane, paused, paused_at, broker, broker_up, broker_since,
  broker_error, broker_node FROM herald_lane_state`)
	if err != nil {
		return nil, fmt.Errorf("%s: lane states: %w", name, err)
	}
	defer rows.Close()
	out := map[string]store.LaneState{}
	for rows.Next() {
		var st store.LaneState
		var pausedAt, since sql.NullTime
		if err := rows.Scan(&st.Lane, &st.Paused, &pausedAt, &st.Broker, &st.BrokerUp, &since,
			&st.BrokerError, &st.Node); err != nil {
			return nil, fmt.Errorf("%s: lane states: %w", name, err)
		}
		st.PausedAt, st.BrokerSince = pausedAt.Time, since.Time
		out[st.Lane] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: lane states: %w", name, err)
	}
	return out, nil
}
