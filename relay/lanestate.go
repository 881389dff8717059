package relay

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldhq/herald/store"
)

// stateTimeout bounds one read or write of herald_lane_state.
const stateTimeout = 5 * time.Second

// laneState keeps the relay in step with herald_lane_state: it reads the
// lanes' pauses every poll interval (so an operator's `herald lane pause`
// is obeyed by every process within one) and writes each broker's state
// on every change of its breaker (so `herald status`, another process,
// can show it).
type laneState struct {
	st     store.LaneStater
	node   string
	log    *slog.Logger
	every  time.Duration
	paused map[string]*atomic.Bool // by lane name

	mu      sync.Mutex
	pending map[string]BrokerStatus // broker reports not yet written, by broker
	kick    chan struct{}
	readErr bool // the last read failed (logged once)
}

func newLaneState(cfg Config) *laneState {
	ls := &laneState{st: cfg.Store, node: cfg.Node, log: cfg.Logger, every: time.Hour, paused: map[string]*atomic.Bool{},
		pending: map[string]BrokerStatus{}, kick: make(chan struct{}, 1)}
	for _, l := range cfg.Lanes {
		ls.paused[l.Name] = new(atomic.Bool)
		ls.every = min(ls.every, l.PollInterval)
	}
	return ls
}

// report queues a broker's new state for writing.
func (ls *laneState) report(b BrokerStatus) {
	ls.mu.Lock()
	ls.pending[b.Broker] = b
	ls.mu.Unlock()
	select {
	case ls.kick <- struct{}{}:
	default:
	}
}

// run syncs until ctx ends. The first read has happened (start).
func (ls *laneState) run(ctx context.Context) {
	t := time.NewTicker(ls.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ls.kick:
		case <-t.C:
			ls.read(ctx)
		}
		ls.write(ctx)
	}
}

// read loads the lanes' pauses, logging each change.
func (ls *laneState) read(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	states, err := ls.st.LaneStates(rctx)
	if err != nil {
		if !ls.readErr && ctx.Err() == nil {
			ls.log.Warn("cannot read lane state (pauses); keeping the last known", slog.String("error", err.Error()))
		}
		ls.readErr = true
		return
	}
	ls.readErr = false
	for name, p := range ls.paused {
		now := states[name].Paused
		if p.Swap(now) != now {
			if now {
				ls.log.Info("lane paused: claiming nothing until resumed", slog.String("lane", name))
			} else {
				ls.log.Info("lane resumed", slog.String("lane", name))
			}
		}
	}
}

// write stores the pending broker reports; those that fail stay pending
// for the next round (the database may be down too).
func (ls *laneState) write(ctx context.Context) {
	ls.mu.Lock()
	todo := ls.pending
	ls.pending = map[string]BrokerStatus{}
	ls.mu.Unlock()
	for name, b := range todo {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stateTimeout)
		err := ls.st.SetBrokerState(wctx, b.Lanes, store.BrokerReport{Broker: b.Broker, Up: b.Up, Error: b.Error, Node: ls.node})
		cancel()
		if err != nil {
			ls.mu.Lock()
			if _, newer := ls.pending[name]; !newer {
				ls.pending[name] = b
			}
			ls.mu.Unlock()
		}
	}
}
