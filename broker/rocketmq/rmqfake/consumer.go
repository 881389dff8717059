package rmqfake

import (
	"encoding/json"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Consumer-side request codes served.
const (
	CodePullMessage = 11
	// CodeNotifyConsumerIDsChanged is sent by the broker (one-way) to a
	// group's members when the group's membership changes.
	CodeNotifyConsumerIDsChanged = 40
	CodeQueryOffset              = 14
	CodeUpdateOffset             = 15
	CodeSearchOffsetTime         = 29
	CodeGetMaxOffset             = 30
	CodeGetMinOffset             = 31
	CodeGetConsumerList          = 38
)

// Pull answers.
const (
	ResPullNotFound         = 19
	ResPullRetryImmediately = 20
	ResPullOffsetMoved      = 21
	ResQueryNotFound        = 22
)

// Pull sysFlag bits (PullSysFlag).
const (
	pullCommitOffset = 1
	pullSuspend      = 2
)

func (c *Cluster) serveConsumer(req *Command) (*Command, bool) {
	f := req.ExtFields
	switch req.Code {
	case CodePullMessage:
		return c.pull(req), true
	case CodeQueryOffset:
		off, ok := c.CommittedOffset(f["consumerGroup"], f["topic"], atoi(f["queueId"]))
		if !ok {
			return response(req, ResQueryNotFound, "no committed offset"), true
		}
		return withOffset(req, off), true
	case CodeUpdateOffset:
		c.commit(f["consumerGroup"], f["topic"], atoi(f["queueId"]), atoi64(f["commitOffset"]))
		return response(req, ResSuccess, ""), true
	case CodeGetMaxOffset:
		return withOffset(req, c.store.maxOffset(f["topic"], atoi(f["queueId"]))), true
	case CodeGetMinOffset, CodeSearchOffsetTime:
		return withOffset(req, 0), true
	case CodeGetConsumerList:
		body, _ := json.Marshal(map[string][]string{"consumerIdList": c.Consumers(f["consumerGroup"])})
		resp := response(req, ResSuccess, "")
		resp.Body = body
		return resp, true
	}
	return nil, false
}

func withOffset(req *Command, off int64) *Command {
	resp := response(req, ResSuccess, "")
	resp.ExtFields["offset"] = strconv.FormatInt(off, 10)
	return resp
}

func atoi(s string) int     { n, _ := strconv.Atoi(s); return n }
func atoi64(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

// CommittedOffset is the offset group committed for topic's queue.
func (c *Cluster) CommittedOffset(group, topic string, queue int) (int64, bool) {
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	off, ok := c.store.offsets[offsetKey{group, topic, queue}]
	return off, ok
}

func (c *Cluster) commit(group, topic string, queue int, off int64) {
	if off < 0 {
		return
	}
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	c.store.offsets[offsetKey{group, topic, queue}] = off
}

func (s *store) maxOffset(topic string, queue int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	qs := s.queues[topic]
	if queue < 0 || queue >= len(qs) {
		return 0
	}
	return int64(len(qs[queue]))
}

// heartbeat records the consumer groups a client belongs to, on the
// connection the heartbeat came by. A client new to a group makes the
// group's other members rebalance (NOTIFY_CONSUMER_IDS_CHANGED).
func (c *Cluster) heartbeat(conn net.Conn, req *Command) {
	var hb struct {
		ClientID  string `json:"clientID"`
		Consumers []struct {
			GroupName string `json:"groupName"`
		} `json:"consumerDataSet"`
	}
	if json.Unmarshal(req.Body, &hb) != nil || hb.ClientID == "" {
		return
	}
	c.mu.Lock()
	changed := map[string][]net.Conn{}
	for _, cd := range hb.Consumers {
		members := c.groups[cd.GroupName]
		if members == nil {
			members = map[string]net.Conn{}
			c.groups[cd.GroupName] = members
		}
		if _, known := members[hb.ClientID]; !known {
			changed[cd.GroupName] = otherConns(members, conn)
		}
		members[hb.ClientID] = conn
	}
	c.mu.Unlock()
	c.notifyChanged(changed)
}

// forgetConn drops the group memberships whose heartbeats came by conn.
// Unlike a broker it tells the remaining members nothing: the official
// client's rebalance on a notice races with its own Shutdown (a data race
// the race detector reports when members leave together), so they
// rebalance at their next 20s round.
func (c *Cluster) forgetConn(conn net.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, members := range c.groups {
		for id, on := range members {
			if on == conn {
				delete(members, id)
			}
		}
	}
}

// otherConns lists the distinct connections of members other than conn.
func otherConns(members map[string]net.Conn, conn net.Conn) []net.Conn {
	var out []net.Conn
	for _, on := range members {
		if on != conn && !slices.Contains(out, on) {
			out = append(out, on)
		}
	}
	return out
}

// notifyChanged sends NOTIFY_CONSUMER_IDS_CHANGED (one-way) to each
// group's listed member connections, as a broker does when a group's
// membership changes; the client rebalances at once instead of at its next
// 20s round.
func (c *Cluster) notifyChanged(changed map[string][]net.Conn) {
	for group, conns := range changed {
		for _, conn := range conns {
			c.mu.Lock()
			wmu := c.conns[conn]
			c.mu.Unlock()
			if wmu == nil {
				continue // closed meanwhile
			}
			cmd := &Command{Code: CodeNotifyConsumerIDsChanged, Language: "JAVA", Flag: flagOneway,
				Opaque: c.opaque.Add(1), ExtFields: map[string]string{"consumerGroup": group}}
			frame, err := cmd.Encode()
			if err != nil {
				continue
			}
			wmu.Lock()
			_, _ = conn.Write(frame)
			wmu.Unlock()
		}
	}
}

// unregister drops a client from a group.
func (c *Cluster) unregister(req *Command) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.groups[req.ExtFields["consumerGroup"]], req.ExtFields["clientID"])
}

// Consumers lists the client ids of group's members, sorted: those whose
// heartbeats came by a connection still open and that did not unregister.
func (c *Cluster) Consumers(group string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.groups[group]))
	for id := range c.groups[group] {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// pull answers PULL_MESSAGE, holding it (long polling) while the queue has
// nothing new and the client allows suspension.
func (c *Cluster) pull(req *Command) *Command {
	f := req.ExtFields
	topic, queue, from := f["topic"], atoi(f["queueId"]), atoi64(f["queueOffset"])
	sysFlag := atoi(f["sysFlag"])
	if sysFlag&pullCommitOffset != 0 {
		c.commit(f["consumerGroup"], topic, queue, atoi64(f["commitOffset"]))
	}
	max := atoi(f["maxMsgNums"])
	if max <= 0 {
		max = 32
	}
	wait := min(time.Duration(atoi64(f["suspendTimeoutMillis"]))*time.Millisecond, c.opts.MaxLongPoll)
	deadline := time.Now().Add(wait)
	for {
		msgs, next, maxOff, appended := c.store.read(topic, queue, from, max)
		switch {
		case from > maxOff:
			return pullResponse(req, ResPullOffsetMoved, maxOff, maxOff)
		case len(msgs) > 0:
			kept := filterTags(msgs, f["subscription"])
			if len(kept) == 0 {
				return pullResponse(req, ResPullRetryImmediately, next, maxOff)
			}
			resp := pullResponse(req, ResSuccess, next, maxOff)
			resp.Body = encodeMessages(kept)
			return resp
		}
		left := time.Until(deadline)
		if sysFlag&pullSuspend == 0 || left <= 0 {
			return pullResponse(req, ResPullNotFound, from, maxOff)
		}
		timer := time.NewTimer(left)
		select {
		case <-appended:
		case <-timer.C:
		case <-c.stopping():
			timer.Stop()
			return nil
		}
		timer.Stop()
	}
}

func pullResponse(req *Command, code int, next, maxOff int64) *Command {
	resp := response(req, code, "")
	resp.ExtFields["nextBeginOffset"] = strconv.FormatInt(next, 10)
	resp.ExtFields["minOffset"] = "0"
	resp.ExtFields["maxOffset"] = strconv.FormatInt(maxOff, 10)
	resp.ExtFields["suggestWhichBrokerId"] = "0"
	return resp
}

// read returns up to max messages of a queue from offset on, the next
// offset, the queue's max offset and the channel closed on the next append.
func (s *store) read(topic string, queue int, from int64, max int) ([]Message, int64, int64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var q []Message
	if qs := s.queues[topic]; queue >= 0 && queue < len(qs) {
		q = qs[queue]
	}
	end := int64(len(q))
	if from < 0 || from >= end {
		return nil, from, end, s.appended
	}
	to := min(from+int64(max), end)
	return append([]Message(nil), q[from:to]...), to, end, s.appended
}

// filterTags keeps messages whose tag the subscription expression
// ("*", "" or "a || b") names.
func filterTags(msgs []Message, expr string) []Message {
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == "*" {
		return msgs
	}
	want := map[string]bool{}
	for _, t := range strings.Split(expr, "||") {
		want[strings.TrimSpace(t)] = true
	}
	var out []Message
	for _, m := range msgs {
		if want[m.Tags] {
			out = append(out, m)
		}
	}
	return out
}
