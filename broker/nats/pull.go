package nats

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// pull is a continuous pull on a consumer: the client keeps pull requests
// open and the server pushes into them, so a message is handed over as
// soon as it arrives. It replaced a Fetch per Receive, which waits for a
// full batch or its expiry: at a low rate every Receive waited the whole
// expiry, and with several publishers about 1 % of the messages sat one to
// two seconds before a fetch returned them.
type pull struct {
	it   jetstream.MessagesContext
	msgs chan jetstream.Msg
	err  error // why msgs closed; read only after it is closed
	done chan struct{}
}

// A pull's requests last pullExpiry and ask the server for a heartbeat every
// pullHeartbeat while they wait; two heartbeats missed end the pull
// (Receive then starts a new one). The client library's defaults (30 s, 15
// s) let a pull whose request the server no longer serves sit for 30 s: a
// YAML projection from a NATS 2.9.10 server's stream stalled so in 2 of 11
// drains of 100,000 events (none in 10 against 2.15.2), each time ending
// with "no heartbeat received" and going on at once on a new pull
// (TestSubscriberGoesOnAfterALostPull).
const (
	pullExpiry    = 5 * time.Second
	pullHeartbeat = time.Second
)

// pullBuffer is how many messages the pump hands over ahead of Receive:
// the client library already buffers its pull requests' messages, so this
// only smooths the hand-over.
const pullBuffer = 64

func startPull(con jetstream.Consumer) (*pull, error) {
	it, err := con.Messages(jetstream.PullExpiry(pullExpiry), jetstream.PullHeartbeat(pullHeartbeat))
	if err != nil {
		return nil, err
	}
	p := &pull{it: it, msgs: make(chan jetstream.Msg, pullBuffer), done: make(chan struct{})}
	go p.pump()
	return p, nil
}

// pump moves messages from the iterator to msgs until the iterator stops
// (stop, a deleted consumer, a closed connection).
func (p *pull) pump() {
	defer close(p.msgs)
	for {
		m, err := p.it.Next()
		if err != nil {
			p.err = err
			return
		}
		select {
		case p.msgs <- m:
		case <-p.done:
			p.err = jetstream.ErrMsgIteratorClosed
			return
		}
	}
}

// receive waits for the first message until ctx ends, then takes the ones
// already there, up to most.
func (p *pull) receive(ctx context.Context, most int) ([]jetstream.Msg, error) {
	var out []jetstream.Msg
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case m, ok := <-p.msgs:
		if !ok {
			return nil, fmt.Errorf("pull ended: %w", p.err)
		}
		out = append(out, m)
	}
	for len(out) < most {
		select {
		case m, ok := <-p.msgs:
			if !ok {
				return out, nil
			}
			out = append(out, m)
		default:
			return out, nil
		}
	}
	return out, nil
}

// stop ends the pull; messages it held and did not hand over are
// redelivered by the server after the consumer's AckWait.
func (p *pull) stop() {
	close(p.done)
	p.it.Stop()
	// Drain, so that a pump blocked on a full msgs exits.
	for range p.msgs {
	}
}
