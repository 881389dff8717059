package rmqfake

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// Golden frames from the official client: rocketmq-client-go v2 (the
// version go.mod pins) talks to the fake, which keeps every request frame
// as it came off the wire (Options.tap). Each check below reads the
// client's own bytes, so the fake is tested against the client's encoder,
// never its own. Codes the Go client never sends are covered apart
// (wantedFrames' comment).

// clientFrames records request frames in the order the fake read them.
type clientFrames struct {
	mu  sync.Mutex
	all [][]byte
}

func (f *clientFrames) add(frame []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all = append(f.all, frame)
}

// find returns the first frame of code for which match holds (nil: any),
// decoded, and the frame itself.
func (f *clientFrames) find(code int, match func(*Command) bool) (*Command, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, raw := range f.all {
		cmd, err := DecodeFrame(raw[4:])
		if err == nil && cmd.Code == code && (match == nil || match(cmd)) {
			return cmd, raw
		}
	}
	return nil, nil
}

// last is find's latest match.
func (f *clientFrames) last(code int, match func(*Command) bool) *Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.all) - 1; i >= 0; i-- {
		cmd, err := DecodeFrame(f.all[i][4:])
		if err == nil && cmd.Code == code && (match == nil || match(cmd)) {
			return cmd
		}
	}
	return nil
}

// clientSession is what the official client did against a fake: the
// frames it sent and what it got back.
type clientSession struct {
	c              *Cluster
	frames         *clientFrames
	small, big     *primitive.SendResult
	bigBody        []byte
	batchErr       error
	mu             sync.Mutex
	consumed       map[string][]byte // by CE_id: body, as the client decoded the pull
	consumedTopics map[string]string
}

// The frames rocketmq-client-go v2 sends in a session, by code: route
// lookup, send, batch send (its only use of SEND_MESSAGE_V2's header),
// heartbeat, consumer list, offset query, pull, offset update, and the
// offset searches of ConsumeFromLastOffset (GET_MAX_OFFSET) and
// ConsumeFromTimestamp. It never sends SEND_MESSAGE_V2 (310),
// GET_MIN_OFFSET (31) or UNREGISTER_CLIENT (35): TestGoldenSendV2Frame and
// TestGoldenMinOffsetFrame replay its batch and GET_MAX_OFFSET frames under
// those codes (the same headers), and TestGoldenUnregisterFrame is built
// from the Java broker's header, the one frame not from the client.
var wantedFrames = []struct {
	code  int
	match func(*Command) bool
}{
	{CodeGetRouteInfo, topicOrders}, {CodeSendMessage, nil}, {codeSendBatch, nil},
	{CodeHeartbeat, func(c *Command) bool { return bytes.Contains(c.Body, []byte("golden-first")) }},
	{CodeGetConsumerList, func(c *Command) bool { return c.ExtFields["consumerGroup"] == "golden-first" }},
	{CodeQueryOffset, firstOrders}, {CodePullMessage, firstOrders}, {CodeUpdateOffset, firstOrders},
	{CodeGetMaxOffset, topicOrders}, {CodeSearchOffsetTime, topicOrders},
}

// topicOrders matches frames about the session's topic; firstOrders those
// of its consumer group golden-first.
func topicOrders(c *Command) bool { return c.ExtFields["topic"] == "orders" }
func firstOrders(c *Command) bool {
	return topicOrders(c) && c.ExtFields["consumerGroup"] == "golden-first"
}

// codeSendBatch is SEND_BATCH_MESSAGE, which the fake does not serve.
const codeSendBatch = 320

var (
	sessionOnce sync.Once
	session     *clientSession
	sessionErr  string
)

// officialClientSession runs the client once per test binary: a producer
// sends a small message, a compressed one and a batch; three push
// consumers (from the first offset, the last, a timestamp) subscribe, the
// first one consumes both messages and commits its offsets; all shut down.
func officialClientSession(t *testing.T) *clientSession {
	t.Helper()
	sessionOnce.Do(func() { session, sessionErr = runClientSession() })
	if sessionErr != "" {
		t.Fatal(sessionErr)
	}
	return session
}

func runClientSession() (*clientSession, string) {
	rlog.SetLogLevel("error")
	s := &clientSession{frames: &clientFrames{}, consumed: map[string][]byte{}, consumedTopics: map[string]string{}}
	c, err := New(Options{Queues: sessionQueues, MaxLongPoll: 200 * time.Millisecond, tap: s.frames.add})
	if err != nil {
		return nil, err.Error()
	}
	s.c = c
	// Closed once the clients are shut down; what it stored stays
	// readable (Messages, CommittedOffset).
	defer c.Close()
	instance := "golden-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	p, err := rmq.NewProducer(producer.WithNameServer([]string{c.NameServer()}), producer.WithGroupName("golden-producer"),
		producer.WithInstanceName(instance), producer.WithRetry(0), producer.WithSendMsgTimeout(3*time.Second))
	if err == nil {
		err = p.Start()
	}
	if err != nil {
		return nil, err.Error()
	}
	defer p.Shutdown()
	if err := s.produce(p); err != nil {
		return nil, err.Error()
	}
	consumers, err := s.startConsumers(instance)
	defer func() {
		for _, pc := range consumers {
			_ = pc.Shutdown()
		}
	}()
	if err != nil {
		return nil, err.Error()
	}
	if why := s.settle(consumers[0]); why != "" {
		return nil, why
	}
	return s, ""
}

// produce sends a small message with tags, keys and a property, one over
// the client's 4 KiB threshold (sent zlib-compressed) and a batch.
func (s *clientSession) produce(p rmq.Producer) error {
	ctx := context.Background()
	small := primitive.NewMessage("orders", []byte(`{"n":1}`))
	small.WithTag("Created")
	small.WithKeys([]string{"ev-1", "tx-1"})
	small.WithProperty("CE_id", "ev-1")
	var err error
	if s.small, err = p.SendSync(ctx, small); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	s.bigBody = bytes.Repeat([]byte(`{"n":2}`), 1000)
	big := primitive.NewMessage("orders", s.bigBody)
	big.WithProperty("CE_id", "ev-2")
	if s.big, err = p.SendSync(ctx, big); err != nil {
		return fmt.Errorf("send compressed: %w", err)
	}
	_, s.batchErr = p.SendSync(ctx, primitive.NewMessage("orders", []byte("b1")), primitive.NewMessage("orders", []byte("b2")))
	return nil
}

// startConsumers starts a push consumer per session group: from the first
// offset (it records what it consumes), the last, and a timestamp.
func (s *clientSession) startConsumers(instance string) ([]rmq.PushConsumer, error) {
	froms := []consumer.ConsumeFromWhere{consumer.ConsumeFromFirstOffset, consumer.ConsumeFromLastOffset, consumer.ConsumeFromTimestamp}
	var consumers []rmq.PushConsumer
	for i, group := range sessionGroups {
		pc, err := rmq.NewPushConsumer(consumer.WithNameServer([]string{s.c.NameServer()}), consumer.WithGroupName(group),
			// An instance (client) of its own: consumers sharing one race in
			// the client's rebalance (its Start writes what another's
			// rebalance reads).
			consumer.WithInstance(instance+"-"+group), consumer.WithConsumeFromWhere(froms[i]),
			consumer.WithConsumeTimestamp("20200101000000"))
		if err != nil {
			return consumers, err
		}
		record := i == 0
		err = pc.Subscribe("orders", consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
			func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
				s.mu.Lock()
				defer s.mu.Unlock()
				for _, m := range msgs {
					if record {
						s.consumed[m.GetProperty("CE_id")] = m.Body
						s.consumedTopics[m.GetProperty("CE_id")] = m.Topic
					}
				}
				return consumer.ConsumeSuccess, nil
			})
		if err == nil {
			err = pc.Start()
		}
		if err != nil {
			return consumers, err
		}
		consumers = append(consumers, pc)
	}
	return consumers, nil
}

// settle waits until first (golden-first's consumer) consumed both
// messages, every wanted frame came and each consumer's rebalance is over,
// then has first commit its offsets and waits to see the commit: the
// client commits every 5 s and, one-way, at Shutdown, which may close the
// connection first. It returns why it gave up, or "".
func (s *clientSession) settle(first rmq.PushConsumer) string {
	consumedAll := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.consumed) == 2
	}
	if !within(60*time.Second, func() bool {
		return consumedAll() && s.seenAll(CodeUpdateOffset) && s.committedPast(CodePullMessage) && s.rebalanced()
	}) {
		return "the official client's session did not consume both messages and send every frame within 60s"
	}
	persist, ok := first.(interface{ PersistConsumerOffset() error })
	if !ok {
		return "the push consumer has no PersistConsumerOffset"
	}
	if err := persist.PersistConsumerOffset(); err != nil {
		return err.Error()
	}
	if !within(30*time.Second, func() bool { return s.committedPast(CodeUpdateOffset) }) {
		return "the client's offset commit did not arrive within 30s"
	}
	return ""
}

// sessionQueues is how many queues each topic of the session has;
// sessionGroups its consumer groups.
const sessionQueues = 2

var sessionGroups = []string{"golden-first", "golden-last", "golden-time"}

// rebalanced reports whether each consumer's first rebalance is over: it
// pulled from every queue of its topics (orders and its retry topic), the
// last step of a rebalance. A consumer shut down in the middle of one
// races in the client (its Shutdown writes what the rebalance reads) and
// leaves the rebalance's request behind.
func (s *clientSession) rebalanced() bool {
	for _, g := range sessionGroups {
		for _, topic := range []string{"orders", "%RETRY%" + g} {
			for q := range sessionQueues {
				if cmd, _ := s.frames.find(CodePullMessage, func(c *Command) bool {
					f := c.ExtFields
					return f["consumerGroup"] == g && f["topic"] == topic && f["queueId"] == strconv.Itoa(q)
				}); cmd == nil {
					return false
				}
			}
		}
	}
	return true
}

// within polls cond every 20 ms until it holds (true) or d passed.
func within(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// committedPast reports whether golden-first's latest frame of code (a
// pull or an offset update) for each stored message's queue carries a
// commit offset past the message: the client took the consumption into
// its offsets.
func (s *clientSession) committedPast(code int) bool {
	for _, m := range s.c.Messages("orders") {
		last := s.frames.last(code, func(c *Command) bool {
			return firstOrders(c) && c.ExtFields["queueId"] == strconv.Itoa(m.QueueID)
		})
		if last == nil || atoi64(last.ExtFields["commitOffset"]) <= m.QueueOffset {
			return false
		}
	}
	return true
}

// seenAll reports whether the client sent each of wantedFrames but those
// of code except.
func (s *clientSession) seenAll(except int) bool {
	for _, want := range wantedFrames {
		if cmd, _ := s.frames.find(want.code, want.match); cmd == nil && want.code != except {
			return false
		}
	}
	return true
}

// frame returns the first frame of code matching match, failing the test
// when the client sent none.
func (s *clientSession) frame(t *testing.T, code int, match func(*Command) bool) (*Command, []byte) {
	t.Helper()
	cmd, raw := s.frames.find(code, match)
	if cmd == nil {
		t.Fatalf("the official client sent no frame of code %d matching the test", code)
	}
	return cmd, raw
}

// TestClientFramesWellFormed: every frame the client sent has the layout
// the fake reads: a total length equal to what follows it, serialization
// byte 0 (JSON), language GO, a request (flag bit 0 clear) with an opaque.
func TestClientFramesWellFormed(t *testing.T) {
	s := officialClientSession(t)
	s.frames.mu.Lock()
	all := slices.Clone(s.frames.all)
	s.frames.mu.Unlock()
	seen := map[int]bool{}
	for _, raw := range all {
		if total := binary.BigEndian.Uint32(raw[:4]); int(total) != len(raw)-4 {
			t.Fatalf("frame total length %d, %d bytes follow", total, len(raw)-4)
		}
		if raw[4] != 0 {
			t.Fatalf("serialization byte %d, want 0 (JSON)", raw[4])
		}
		cmd, err := DecodeFrame(raw[4:])
		if err != nil {
			t.Fatalf("the fake cannot read the client's frame %q: %v", raw, err)
		}
		if cmd.Language != "GO" || cmd.IsResponse() {
			t.Errorf("frame %+v: want a request of the GO client", cmd)
		}
		seen[cmd.Code] = true
	}
	for _, want := range wantedFrames {
		if !seen[want.code] {
			t.Errorf("the client sent no frame of code %d", want.code)
		}
	}
}

// TestClientRouteFrame: GET_ROUTEINFO_BY_TOPIC names the topic in
// extFields; the client routes its sends by the answer.
func TestClientRouteFrame(t *testing.T) {
	s := officialClientSession(t)
	s.frame(t, CodeGetRouteInfo, func(c *Command) bool { return c.ExtFields["topic"] == "orders" })
	if s.small.MessageQueue == nil || s.small.MessageQueue.BrokerName != "broker-a" || s.small.MessageQueue.Topic != "orders" {
		t.Fatalf("the client sent to %+v, want a queue of orders on broker-a (from the route answer)", s.small.MessageQueue)
	}
}

// TestClientSendFrame: SEND_MESSAGE's header (producerGroup, topic,
// queueId, sysFlag, bornTimestamp, properties joined by \x01 and \x02) is
// stored as the client meant it, and the client reads the answer's msgId,
// queueId and queueOffset.
func TestClientSendFrame(t *testing.T) {
	s := officialClientSession(t)
	cmd, _ := s.frame(t, CodeSendMessage, func(c *Command) bool { return strings.Contains(c.ExtFields["properties"], "ev-1") })
	h, err := parseSendHeader(cmd)
	if err != nil {
		t.Fatalf("the fake cannot read the client's send header %v: %v", cmd.ExtFields, err)
	}
	if h.group != "golden-producer" || h.topic != "orders" || h.sysFlag != 0 || h.bornTimestamp <= 0 {
		t.Fatalf("send header read as %+v from %v", h, cmd.ExtFields)
	}
	m := storedWith(t, s.c, "ev-1")
	if string(m.Body) != `{"n":1}` || m.Tags != "Created" || !slices.Equal(m.Keys, []string{"ev-1", "tx-1"}) ||
		m.UniqKey == "" || m.UniqKey != s.small.MsgID || m.QueueID != h.queueID || m.ProducerGroup != "golden-producer" {
		t.Fatalf("stored %+v from the client's frame %v (send result %+v)", m, cmd.ExtFields, s.small)
	}
	if s.small.OffsetMsgID != m.MsgID || s.small.QueueOffset != m.QueueOffset || s.small.MessageQueue.QueueId != m.QueueID {
		t.Fatalf("the client read the answer as %+v; the fake stored %+v", s.small, m)
	}
}

// TestClientCompressedSendFrame: a body over the client's threshold comes
// zlib-compressed with sysFlag bit 0 set, and is stored inflated.
func TestClientCompressedSendFrame(t *testing.T) {
	s := officialClientSession(t)
	cmd, _ := s.frame(t, CodeSendMessage, func(c *Command) bool { return strings.Contains(c.ExtFields["properties"], "ev-2") })
	if h, err := parseSendHeader(cmd); err != nil || h.sysFlag&sysFlagCompressed == 0 || bytes.Equal(cmd.Body, s.bigBody) {
		t.Fatalf("the client's compressed send: header %+v (%v), body of %d bytes; want sysFlag bit 0 and a compressed body",
			h, err, len(cmd.Body))
	}
	if m := storedWith(t, s.c, "ev-2"); !bytes.Equal(m.Body, s.bigBody) {
		t.Fatalf("stored a body of %d bytes, want the %d the client compressed", len(m.Body), len(s.bigBody))
	}
}

// TestClientHeartbeatFrame: HEART_BEAT's JSON body names the client and
// its consumer groups; replayed on one connection to a fresh fake, the
// client's heartbeat makes it a member of its group and the client's
// GET_CONSUMER_LIST_BY_GROUP lists it.
func TestClientHeartbeatFrame(t *testing.T) {
	s := officialClientSession(t)
	cmd, _ := s.frame(t, CodeHeartbeat, func(c *Command) bool { return bytes.Contains(c.Body, []byte("golden-first")) })
	var hb struct {
		ClientID string `json:"clientID"`
	}
	if err := json.Unmarshal(cmd.Body, &hb); err != nil || !strings.Contains(hb.ClientID, "golden-") {
		t.Fatalf("heartbeat body %s: %v", cmd.Body, err)
	}
	c := startCluster(t)
	conn := dialRaw(t, c.Broker())
	writeRaw(t, conn, mustFrame(t, s, CodeHeartbeat, func(c *Command) bool { return bytes.Contains(c.Body, []byte("golden-first")) }))
	readAnswer(t, conn)
	if got := c.Consumers("golden-first"); !slices.Contains(got, hb.ClientID) {
		t.Fatalf("after the client's heartbeat golden-first lists %v, want %s", got, hb.ClientID)
	}
	writeRaw(t, conn, mustFrame(t, s, CodeGetConsumerList, func(c *Command) bool { return c.ExtFields["consumerGroup"] == "golden-first" }))
	resp := readAnswer(t, conn)
	var ids struct {
		ConsumerIDList []string `json:"consumerIdList"`
	}
	if err := json.Unmarshal(resp.Body, &ids); err != nil || !slices.Contains(ids.ConsumerIDList, hb.ClientID) {
		t.Fatalf("GET_CONSUMER_LIST_BY_GROUP from the client answered %s (%v), want %s listed", resp.Body, err, hb.ClientID)
	}
}

// TestClientConsumerFrames: the consumer's offset query, pull and offset
// update carry consumerGroup, topic and queueId as the fake reads them;
// the client decoded the pulled messages (the store format, encode.go),
// and the offsets it committed are the fake's.
func TestClientConsumerFrames(t *testing.T) {
	s := officialClientSession(t)
	q, _ := s.frame(t, CodeQueryOffset, firstOrders)
	if q.ExtFields["topic"] != "orders" || q.ExtFields["queueId"] == "" {
		t.Fatalf("QUERY_CONSUMER_OFFSET %v", q.ExtFields)
	}
	pull, _ := s.frame(t, CodePullMessage, firstOrders)
	f := pull.ExtFields
	if f["topic"] != "orders" || f["queueOffset"] == "" || atoi(f["maxMsgNums"]) <= 0 || atoi(f["sysFlag"])&pullSuspend == 0 ||
		atoi64(f["suspendTimeoutMillis"]) <= 0 || (f["subscription"] != "" && f["subscription"] != "*") {
		t.Fatalf("PULL_MESSAGE read as %v", f)
	}
	if !bytes.Equal(s.consumed["ev-1"], []byte(`{"n":1}`)) || !bytes.Equal(s.consumed["ev-2"], s.bigBody) || s.consumedTopics["ev-1"] != "orders" {
		t.Fatalf("the client decoded the pulls as %q (topics %v)", s.consumed, s.consumedTopics)
	}
	for _, m := range s.c.Messages("orders") {
		last := s.frames.last(CodeUpdateOffset, func(c *Command) bool {
			return firstOrders(c) && c.ExtFields["queueId"] == strconv.Itoa(m.QueueID)
		})
		if last == nil {
			t.Fatalf("the client committed no offset for queue %d", m.QueueID)
		}
		off, ok := s.c.CommittedOffset("golden-first", "orders", m.QueueID)
		if want := atoi64(last.ExtFields["commitOffset"]); !ok || off != want || off <= m.QueueOffset {
			t.Fatalf("queue %d: committed %d (%v), the client's last UPDATE_CONSUMER_OFFSET said %d, past offset %d",
				m.QueueID, off, ok, want, m.QueueOffset)
		}
	}
}

// TestClientOffsetSearchFrames: GET_MAX_OFFSET (ConsumeFromLastOffset) and
// SEARCH_OFFSET_BY_TIMESTAMP (ConsumeFromTimestamp) name topic and queue,
// the latter its timestamp in milliseconds.
func TestClientOffsetSearchFrames(t *testing.T) {
	s := officialClientSession(t)
	maxOff, _ := s.frame(t, CodeGetMaxOffset, func(c *Command) bool { return c.ExtFields["topic"] == "orders" })
	if maxOff.ExtFields["queueId"] == "" {
		t.Fatalf("GET_MAX_OFFSET %v", maxOff.ExtFields)
	}
	search, _ := s.frame(t, CodeSearchOffsetTime, func(c *Command) bool { return c.ExtFields["topic"] == "orders" })
	if want := time.Date(2020, 1, 1, 0, 0, 0, 0, time.Local).UnixMilli(); atoi64(search.ExtFields["timestamp"]) != want {
		t.Fatalf("SEARCH_OFFSET_BY_TIMESTAMP %v, want timestamp %d", search.ExtFields, want)
	}
}

// storedWith returns the message of topic orders whose CE_id is id.
func storedWith(t *testing.T, c *Cluster, id string) Message {
	t.Helper()
	for _, m := range c.Messages("orders") {
		if m.Properties["CE_id"] == id {
			return m
		}
	}
	t.Fatalf("no stored message with CE_id %s", id)
	return Message{}
}

// mustFrame returns the client's raw frame (see clientSession.frame).
func mustFrame(t *testing.T, s *clientSession, code int, match func(*Command) bool) []byte {
	t.Helper()
	_, raw := s.frame(t, code, match)
	return raw
}

// TestGoldenSendV2Frame: SEND_MESSAGE_V2 (310) with the one-letter header
// names of SendMessageRequestV2Header. The Go client writes that header
// only for batches (SEND_BATCH_MESSAGE, 320, not served); its batch frame,
// replayed under code 310 (the header RocketMQ defines for both), is read
// by the fake field by field and stored with the frame's body.
func TestGoldenSendV2Frame(t *testing.T) {
	s := officialClientSession(t)
	if s.batchErr == nil || !strings.Contains(s.batchErr.Error(), "3") {
		t.Fatalf("the client's batch send answered %v, want REQUEST_CODE_NOT_SUPPORTED (3)", s.batchErr)
	}
	batch, raw := s.frame(t, codeSendBatch, nil)
	for short := range v2Names {
		if _, ok := batch.ExtFields[short]; !ok {
			t.Fatalf("the client's V2 header %v lacks %q", batch.ExtFields, short)
		}
	}
	v2 := bytes.Replace(raw, []byte(`"code":320,`), []byte(`"code":310,`), 1)
	if bytes.Equal(v2, raw) {
		t.Fatalf("no code 320 in the client's frame %q", raw)
	}
	c := startCluster(t)
	roundTrip(t, c.NameServer(), goldenRouteRequest) // creates the topic
	resp, err := DecodeFrame(roundTrip(t, c.Broker(), v2)[4:])
	if err != nil {
		t.Fatal(err)
	}
	f := batch.ExtFields
	if resp.Code != ResSuccess || resp.Opaque != batch.Opaque || resp.ExtFields["queueId"] != f["e"] ||
		resp.ExtFields["queueOffset"] != "0" || len(resp.ExtFields["msgId"]) != 32 {
		t.Fatalf("answer %+v to the client's V2 header %v", resp, f)
	}
	got := c.Messages("orders")
	if len(got) != 1 {
		t.Fatalf("%d messages stored", len(got))
	}
	m := got[0]
	if m.ProducerGroup != f["a"] || strconv.Itoa(m.QueueID) != f["e"] || strconv.FormatInt(m.BornTimestamp.UnixMilli(), 10) != f["g"] ||
		!bytes.Equal(m.Body, batch.Body) || m.MsgID != resp.ExtFields["msgId"] {
		t.Fatalf("stored %+v from the client's V2 header %v", m, f)
	}
}

// TestGoldenMinOffsetFrame: GET_MIN_OFFSET (31), which the Go client never
// sends, has GET_MAX_OFFSET's header (topic, queueId); the client's
// GET_MAX_OFFSET frame replayed under code 31 is answered offset 0 (the
// fake keeps every message).
func TestGoldenMinOffsetFrame(t *testing.T) {
	s := officialClientSession(t)
	_, raw := s.frame(t, CodeGetMaxOffset, func(c *Command) bool { return c.ExtFields["topic"] == "orders" })
	minFrame := bytes.Replace(raw, []byte(`"code":30,`), []byte(`"code":31,`), 1)
	if bytes.Equal(minFrame, raw) {
		t.Fatalf("no code 30 in the client's frame %q", raw)
	}
	c := startCluster(t)
	resp, err := DecodeFrame(roundTrip(t, c.Broker(), minFrame)[4:])
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != ResSuccess || resp.ExtFields["offset"] != "0" {
		t.Fatalf("GET_MIN_OFFSET answered %+v", resp)
	}
}

// TestGoldenUnregisterFrame: UNREGISTER_CLIENT (35) drops a client from a
// group. The Go client never sends it (it just stops its heartbeats), so
// this frame is the one built by hand, byte by byte, from the Java
// broker's UnregisterClientRequestHeader (clientID, producerGroup,
// consumerGroup); the heartbeat before it is the client's own.
func TestGoldenUnregisterFrame(t *testing.T) {
	s := officialClientSession(t)
	hb, raw := s.frame(t, CodeHeartbeat, func(c *Command) bool { return bytes.Contains(c.Body, []byte("golden-first")) })
	var who struct {
		ClientID string `json:"clientID"`
	}
	if err := json.Unmarshal(hb.Body, &who); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t)
	conn := dialRaw(t, c.Broker())
	writeRaw(t, conn, raw)
	readAnswer(t, conn)
	if got := c.Consumers("golden-first"); !slices.Contains(got, who.ClientID) {
		t.Fatalf("after the heartbeat golden-first lists %v", got)
	}
	header := `{"code":35,"language":"JAVA","version":317,"opaque":11,"flag":0,"extFields":{"clientID":"` + who.ClientID +
		`","producerGroup":"","consumerGroup":"golden-first"}}`
	frame := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)))
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(header)))
	writeRaw(t, conn, append(frame, header...))
	if resp := readAnswer(t, conn); resp.Code != ResSuccess || resp.Opaque != 11 {
		t.Fatalf("UNREGISTER_CLIENT answered %+v", resp)
	}
	if got := c.Consumers("golden-first"); slices.Contains(got, who.ClientID) {
		t.Fatalf("after UNREGISTER_CLIENT golden-first still lists %v", got)
	}
}
