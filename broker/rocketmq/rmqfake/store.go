package rmqfake

import (
	"encoding/binary"
	"encoding/hex"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Message is one stored message.
type Message struct {
	Topic       string
	QueueID     int
	QueueOffset int64
	// MsgID is the offset message id the broker answered: store host IPv4
	// (4 bytes), port (4 bytes), commit-log offset (8 bytes), upper hex.
	MsgID string
	// UniqKey is the client's message id (the UNIQ_KEY property), what
	// SendResult.MsgID holds.
	UniqKey string
	Tags    string
	Keys    []string
	// Properties are all properties, system ones (TAGS, KEYS, UNIQ_KEY,
	// SHARDING_KEY, ...) included.
	Properties     map[string]string
	Body           []byte
	BornTimestamp  time.Time
	StoreTimestamp time.Time
	ProducerGroup  string
	// CommitLogOffset is the message's made-up commit-log position.
	CommitLogOffset int64
}

type store struct {
	mu        sync.Mutex
	queues    map[string][][]Message
	commitLog int64
	offsets   map[offsetKey]int64 // committed consumer offsets
	appended  chan struct{}       // closed and replaced on every append, for long polls
}

type offsetKey struct {
	group, topic string
	queue        int
}

func newStore() *store {
	return &store{queues: map[string][][]Message{}, offsets: map[offsetKey]int64{}, appended: make(chan struct{})}
}

func (s *store) ensureTopic(topic string, n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queues[topic]; ok {
		return len(q)
	}
	s.queues[topic] = make([][]Message, n)
	return n
}

func (s *store) append(topic string, queue int, m Message, host string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	qs := s.queues[topic]
	if queue < 0 || queue >= len(qs) {
		return Message{}, false
	}
	m.QueueID, m.QueueOffset = queue, int64(len(qs[queue]))
	m.MsgID, m.CommitLogOffset, m.StoreTimestamp = offsetMsgID(host, s.commitLog), s.commitLog, time.Now()
	s.commitLog += int64(len(m.Body)) + 100 // a made-up record overhead keeps offsets distinct
	m.UniqKey, m.Tags = m.Properties["UNIQ_KEY"], m.Properties["TAGS"]
	if k := m.Properties["KEYS"]; k != "" {
		m.Keys = strings.Split(k, " ")
	}
	qs[queue] = append(qs[queue], m)
	close(s.appended)
	s.appended = make(chan struct{})
	return m, true
}

// offsetMsgID encodes host:port and a commit-log offset as the broker does.
func offsetMsgID(host string, offset int64) string {
	var b [16]byte
	h, p, _ := net.SplitHostPort(host)
	if ip := net.ParseIP(h).To4(); ip != nil {
		copy(b[:4], ip)
	}
	port, _ := strconv.Atoi(p)
	binary.BigEndian.PutUint32(b[4:8], uint32(port))
	binary.BigEndian.PutUint64(b[8:], uint64(offset))
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// Messages returns topic's messages by queue, then offset.
func (c *Cluster) Messages(topic string) []Message {
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	var out []Message
	for _, q := range c.store.queues[topic] {
		out = append(out, q...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].QueueID < out[j].QueueID })
	return out
}

// Topics lists the topics that exist (looked up or sent to).
func (c *Cluster) Topics() []string {
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	out := make([]string, 0, len(c.store.queues))
	for t := range c.store.queues {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
