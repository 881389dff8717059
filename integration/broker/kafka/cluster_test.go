package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	. "github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/internal/clustertest"
	"github.com/heraldhq/herald/projector/projectortest"
	"github.com/heraldhq/herald/relay"
)

// threeBrokers is a kfake cluster of three brokers, one of which the test
// can take down (its listener closed, its open connections cut on their
// next request) and bring back on the same port.
type threeBrokers struct {
	t     *testing.T
	c     *kfake.Cluster
	addrs []string // by node id
	down  atomic.Int32
}

func startThreeBrokers(t *testing.T, topic string, partitions int32) *threeBrokers {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// Three replicas (kfake's default for three brokers), two in sync
	// before acks=all answers.
	if err := c.CreateTopic(topic, partitions, map[string]string{"min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	if ti := c.TopicInfo(topic); ti == nil || ti.NumReplicas != 3 {
		t.Fatalf("topic %s: %+v, want 3 replicas", topic, ti)
	}
	b := &threeBrokers{t: t, c: c, addrs: c.ListenAddrs()}
	b.down.Store(-1)
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if node := c.CurrentNode(); node == b.down.Load() {
			return nil, errors.New("broker down"), true // closes the connection
		}
		return nil, nil, false
	})
	return b
}

// stop takes node down: no new connections, and every request on an open
// one closes it. Its partitions move to the other two.
func (b *threeBrokers) stop(node int32) {
	b.t.Helper()
	b.down.Store(node)
	if err := b.c.RemoveNode(node); err != nil {
		b.t.Fatal(err)
	}
}

// start brings node back, on a new port, and hands it partitions again.
// Not on its old port: kfake's removed node goes on serving the
// connections it had, as its old self, which leads nothing any more. A
// client that had kept an idle one (no request on it while the node was
// down, so the control above never closed it) used it again after the
// restart and got NOT_LEADER_FOR_PARTITION for ever for the partitions the
// new node leads. A real broker's restart closes every connection; a new
// address makes the clients drop theirs, as metadata names the node anew.
func (b *threeBrokers) start(node int32) {
	b.t.Helper()
	_, port, err := b.c.AddNode(node, 0)
	if err != nil {
		b.t.Fatal(err)
	}
	b.addrs[node] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	b.down.Store(-1)
	b.c.ShufflePartitionLeaders()
}

// TestClusterFailover relays clustertest.Events() events, ordered by key,
// to a topic of 6 partitions with 3 replicas on 3 brokers (acks=all,
// idempotent producer) while partition leaders move, and one broker is down
// for a quarter of the run; three projector processes in one consumer
// group consume meanwhile, and one is SIGKILLed mid-run. Every event must be
// delivered (none dead), each key's events must sit in its partition in
// commit order, and after the rebalance the read model must count every
// event exactly once.
func TestClusterFailover(t *testing.T) {
	const topic, partitions = "events", 6
	b := startThreeBrokers(t, topic, partitions)
	n := clustertest.Events()
	load := clustertest.NewLoad(t, n, 1000)
	model := clustertest.NewModel(t)
	job := memberJob{Brokers: b.addrs, Group: projectortest.Name("g"), Topic: topic,
		Path: model.Path, Table: model.Table, Model: model.Count.Table}
	var members []*member
	for range 3 {
		members = append(members, startMember(t, job))
	}
	t.Cleanup(func() {
		if t.Failed() {
			st, err := model.Store.ProjectionStats(context.Background(), model.Table, "count")
			t.Logf("read model counts %d events; projection stats %+v %v", model.Count.Total(t, model.Store.DB()), st, err)
			reportGroup(t, b.addrs, job.Group, topic)
			reportMembers(t, members)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := b.c.WaitGroupStable(ctx, job.Group, 3); err != nil {
		t.Fatalf("group of 3 members: %v\n%s", err, members[0].out.String())
	}

	pub := newPublisher(t, Config{Brokers: b.addrs, ClientID: "herald-cluster"})
	stopRelay := load.Relay(t, clustertest.Lane(pub, topic, relay.OrderingKey))
	load.WaitDelivered(t, n/5, 60*time.Second)
	t.Logf("moving partitions 0-2 at %d delivered", load.Stats(t).Delivered)
	for p := range int32(3) {
		if err := b.c.MoveTopicPartition(topic, p, (b.c.LeaderFor(topic, p)+1)%3); err != nil {
			t.Fatal(err)
		}
	}
	load.WaitDelivered(t, 2*n/5, 60*time.Second)
	t.Logf("stopping broker 1 at %d delivered", load.Stats(t).Delivered)
	b.stop(1)
	model.WaitProjected(t, n/4, 60*time.Second)
	t.Logf("SIGKILL group member 0 at %d projected", model.Count.Total(t, model.Store.DB()))
	members[0].kill()
	load.WaitDelivered(t, 2*n/3, 60*time.Second)
	t.Logf("starting broker 1 again at %d delivered", load.Stats(t).Delivered)
	b.start(1)

	load.WaitDelivered(t, n, 90*time.Second)
	stopRelay()
	if st := load.Stats(t); st.Delivered != int64(n) || st.Dead != 0 {
		t.Fatalf("outbox stats %+v, want %d delivered and none dead", st, n)
	}
	load.Retried(t)
	checkTopicOrder(t, b.addrs, topic, load.Sent)
	model.WaitProjected(t, n, 90*time.Second)
	for _, m := range members[1:] {
		m.terminate(t)
	}
	model.CheckExactlyOnce(t, load.Sent)
}

// reportGroup logs, after a failure, each partition's end offset, the
// group's committed offset and the member that owns it: a partition whose
// commit stays behind its end names the stalled consumer.
func reportGroup(t *testing.T, addrs []string, group, topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Logf("group report: %v", err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Logf("group report: end offsets: %v", err)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Logf("group report: committed offsets: %v", err)
	}
	owners := map[int32]string{}
	if described, err := adm.DescribeGroups(ctx, group); err == nil {
		for _, m := range described[group].Members {
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, tp := range a.Topics {
					for _, p := range tp.Partitions {
						owners[p] = m.ClientID + "/" + m.MemberID
					}
				}
			}
		}
		t.Logf("group %s: state %s, %d members", group, described[group].State, len(described[group].Members))
	}
	ends.Each(func(o kadm.ListedOffset) {
		c, _ := committed.Lookup(topic, o.Partition)
		t.Logf("partition %d: end %d, committed %d, owner %q", o.Partition, o.Offset, c.At, owners[o.Partition])
	})
}

// reportMembers logs, after a failure, whether each member still runs and
// the end of what it printed: a stalled projection says which member
// stopped and why.
func reportMembers(t *testing.T, members []*member) {
	for i, m := range members {
		state := "running"
		select {
		case <-m.exited:
			state = fmt.Sprintf("exited: %v", m.err)
		default:
		}
		out := m.out.String()
		if len(out) > 20000 {
			out = "…" + out[len(out)-20000:]
		}
		t.Logf("member %d %s; output:\n%s", i, state, out)
	}
}

// checkTopicOrder reads the whole topic and checks that every event is
// there, that each key lives on one partition, and that its sequence
// numbers never go back there (a republish after a lost ack may repeat the
// last one, never reorder).
func checkTopicOrder(t *testing.T, addrs []string, topic string, sent map[string]int64) {
	t.Helper()
	var total int64
	for _, k := range sent {
		total += k
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ids := map[string]bool{}
	last, part := map[string]int64{}, map[string]int32{}
	bad := 0
	for int64(len(ids)) < total && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			var p projectortest.Payload
			if err := json.Unmarshal(r.Value, &p); err != nil {
				t.Fatalf("record %d/%d: %v", r.Partition, r.Offset, err)
			}
			ids[header(r, "ce_id")] = true
			if was, ok := part[p.Key]; ok && was != r.Partition && bad < 5 {
				t.Errorf("key %s on partitions %d and %d", p.Key, was, r.Partition)
				bad++
			}
			if p.Seq < last[p.Key] && bad < 5 {
				t.Errorf("[key order] key %s: seq %d after %d in partition %d", p.Key, p.Seq, last[p.Key], r.Partition)
				bad++
			}
			part[p.Key], last[p.Key] = r.Partition, max(last[p.Key], p.Seq)
		})
	}
	if int64(len(ids)) != total {
		t.Errorf("topic holds %d distinct events, want %d", len(ids), total)
	}
	for key, n := range sent {
		if last[key] != n {
			t.Errorf("key %s: last seq %d in the topic, want %d", key, last[key], n)
		}
	}
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
