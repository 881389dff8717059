package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/heraldhq/herald/backoff"
)

// listenRetry spaces the reconnects of a wakeup listener: from 100 ms,
// doubling to 5 s, with equal jitter so that the relays of a restarted
// server do not reconnect in step.
var listenRetry = backoff.Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: backoff.JitterEqual}

// listenAppName marks the listener's sessions in pg_stat_activity.
const listenAppName = "herald-wakeups"

// Wakeups returns a channel that receives soon after any transaction that
// enqueued into table commits, in any process: the relay's cue to claim
// now instead of at its next poll. Bursts coalesce (the channel holds one
// signal and the listener never blocks on it).
//
// The listener has its own connection, outside the pool, with the pool's
// settings; LISTEN is active when Wakeups returns. If the connection drops,
// it reconnects with a jittered backoff and then sends one signal, since
// events may have committed meanwhile. The channel is closed when ctx ends.
func (s *Store) Wakeups(ctx context.Context, table string) (<-chan struct{}, error) {
	if _, err := quote(table); err != nil {
		return nil, err
	}
	cfg, err := s.connConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres store: wakeups for %s: %w", table, err)
	}
	channel := NotifyChannel(table)
	conn, err := listen(ctx, cfg, channel)
	if err != nil {
		return nil, fmt.Errorf("postgres store: wakeups for %s: %w", table, err)
	}
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		for conn != nil {
			waitNotifications(ctx, conn, ch)
			closeConn(conn)
			conn = reconnect(ctx, cfg, channel)
			signal(ch)
		}
	}()
	return ch, nil
}

// connConfig copies the connection settings of one pooled connection, so
// the listener connects like the pool does (New gives no DSN).
func (s *Store) connConfig(ctx context.Context) (*pgx.ConnConfig, error) {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var cfg *pgx.ConnConfig
	err = c.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errors.New("the pool does not use the pgx driver")
		}
		cfg = sc.Conn().Config().Copy()
		return nil
	})
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = listenAppName
	return cfg, nil
}

// listen opens a connection and LISTENs on channel.
func listen(ctx context.Context, cfg *pgx.ConnConfig, channel string) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		closeConn(conn)
		return nil, err
	}
	return conn, nil
}

// waitNotifications signals ch for every notification until ctx ends or
// the connection fails.
func waitNotifications(ctx context.Context, conn *pgx.Conn, ch chan<- struct{}) {
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return
		}
		signal(ch)
	}
}

// reconnect listens again, backing off between failures; nil once ctx ends.
func reconnect(ctx context.Context, cfg *pgx.ConnConfig, channel string) *pgx.Conn {
	waits := backoff.Series{Policy: listenRetry}
	for {
		t := time.NewTimer(waits.Next())
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		if conn, err := listen(ctx, cfg, channel); err == nil {
			return conn
		}
	}
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Compile-time check that the pgx stdlib connection is what Raw hands out.
var _ driver.Conn = (*stdlib.Conn)(nil)
