package rmqfake

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// goldenRouteRequest is GET_ROUTEINFO_BY_TOPIC for topic "orders" as
// rocketmq-client-go v2 writes it (remote.encode with the JSON codec): a
// 4-byte total length, a 4-byte header length whose high byte is the
// serialization type 0 (JSON), the header as jsoniter marshals
// RemotingCommand (field order code, language, version, opaque, flag,
// remark, extFields; language always "GO"), no body.
var goldenRouteRequest = func() []byte {
	header := `{"code":105,"language":"GO","version":317,"opaque":7,"flag":0,"remark":"","extFields":{"topic":"orders"}}`
	frame := []byte{0, 0, 0, byte(4 + len(header)), 0, 0, 0, byte(len(header))}
	return append(frame, header...)
}()

func startCluster(t *testing.T) *Cluster {
	t.Helper()
	c, err := New(Options{Queues: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// roundTrip writes frame raw and returns the raw answer, length included.
func roundTrip(t *testing.T, addr string, frame []byte) []byte {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	var n [4]byte
	if _, err := conn.Read(n[:]); err != nil {
		t.Fatalf("read answer: %v", err)
	}
	rest := make([]byte, binary.BigEndian.Uint32(n[:]))
	if _, err := readFull(conn, rest); err != nil {
		t.Fatal(err)
	}
	return append(n[:], rest...)
}

func readFull(conn net.Conn, b []byte) (int, error) {
	got := 0
	for got < len(b) {
		n, err := conn.Read(b[got:])
		got += n
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

// TestGoldenRouteFrame: the name server reads the client's frame and
// answers one the client's decoder reads: serialization byte 0, flag bit 0
// set, the request's opaque, code 0, and a TopicRouteData body whose
// brokerAddrs maps broker id 0 (the master) to the broker's address.
func TestGoldenRouteFrame(t *testing.T) {
	c := startCluster(t)
	raw := roundTrip(t, c.NameServer(), goldenRouteRequest)
	if total := binary.BigEndian.Uint32(raw[:4]); int(total) != len(raw)-4 {
		t.Fatalf("total length %d, frame has %d bytes after it", total, len(raw)-4)
	}
	if raw[4] != 0 {
		t.Fatalf("serialization byte %d, want 0 (JSON)", raw[4])
	}
	hlen := int(binary.BigEndian.Uint32(raw[4:8]) & 0xFFFFFF)
	var h struct {
		Code   int   `json:"code"`
		Opaque int32 `json:"opaque"`
		Flag   int   `json:"flag"`
	}
	if err := json.Unmarshal(raw[8:8+hlen], &h); err != nil {
		t.Fatalf("header %q: %v", raw[8:8+hlen], err)
	}
	if h.Code != ResSuccess || h.Opaque != 7 || h.Flag&1 != 1 {
		t.Fatalf("header %+v: want code 0, opaque 7, response flag", h)
	}
	var route routeData
	if err := json.Unmarshal(raw[8+hlen:], &route); err != nil {
		t.Fatalf("body %q: %v", raw[8+hlen:], err)
	}
	if len(route.QueueDatas) != 1 || route.QueueDatas[0].WriteQueueNums != 3 || route.QueueDatas[0].Perm != 6 ||
		route.BrokerDatas[0].BrokerAddrs["0"] != c.Broker() {
		t.Fatalf("route %+v", route)
	}
}

// TestGoldenSendV2Frame: SEND_MESSAGE_V2 with the one-letter header names
// of SendMessageRequestV2Header, properties joined by \x01 and \x02, and a
// zlib body flagged by sysFlag bit 0, is stored decoded, and the answer
// carries msgId, queueId and queueOffset.
func TestGoldenSendV2Frame(t *testing.T) {
	c := startCluster(t)
	roundTrip(t, c.NameServer(), goldenRouteRequest) // creates the topic
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write([]byte(`{"n":1}`))
	_ = zw.Close()
	req := &Command{Code: CodeSendMessageV2, Language: "GO", Version: 317, Opaque: 9, ExtFields: map[string]string{
		"a": "herald", "b": "orders", "c": "TBW102", "d": "4", "e": "2", "f": "1", "g": "1700000000000", "h": "0",
		"i": "TAGS\x01Created\x02KEYS\x01ev-1 tx-1\x02UNIQ_KEY\x01AB01\x02CE_id\x01ev-1\x02", "j": "0", "k": "false",
		"l": "0", "m": "false", "n": "broker-a"}, Body: z.Bytes()}
	frame, err := req.Encode()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := DecodeFrame(roundTrip(t, c.Broker(), frame)[4:])
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != ResSuccess || resp.Opaque != 9 || resp.ExtFields["queueId"] != "2" || resp.ExtFields["queueOffset"] != "0" ||
		len(resp.ExtFields["msgId"]) != 32 {
		t.Fatalf("answer %+v", resp)
	}
	got := c.Messages("orders")
	if len(got) != 1 {
		t.Fatalf("%d messages stored", len(got))
	}
	m := got[0]
	if string(m.Body) != `{"n":1}` || m.Tags != "Created" || len(m.Keys) != 2 || m.Keys[1] != "tx-1" ||
		m.UniqKey != "AB01" || m.Properties["CE_id"] != "ev-1" || m.QueueID != 2 || m.MsgID != resp.ExtFields["msgId"] {
		t.Fatalf("stored %+v", m)
	}
}

// TestUnsupportedCodeAnswered: an unknown request is answered
// REQUEST_CODE_NOT_SUPPORTED, not dropped; the binary header serialization
// closes the connection.
func TestUnsupportedCodeAnswered(t *testing.T) {
	c := startCluster(t)
	frame, _ := (&Command{Code: 41, Language: "GO", Opaque: 3}).Encode() // LOCK_BATCH_MQ
	resp, err := DecodeFrame(roundTrip(t, c.Broker(), frame)[4:])
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != ResNotSupported || resp.Opaque != 3 {
		t.Fatalf("answer %+v", resp)
	}
	bin := append([]byte(nil), goldenRouteRequest...)
	bin[4] = 1 // RocketMQ binary serialization
	conn, err := net.Dial("tcp", c.NameServer())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = conn.Write(bin)
	if n, err := conn.Read(make([]byte, 4)); err == nil {
		t.Fatalf("binary serialization answered with %d bytes, want the connection closed", n)
	}
}

// TestStopStartKeepsPortsAndMessages: the outage hooks reopen the same
// addresses with the stored messages.
func TestStopStartKeepsPortsAndMessages(t *testing.T) {
	c := startCluster(t)
	ns, br := c.NameServer(), c.Broker()
	roundTrip(t, ns, goldenRouteRequest)
	c.Stop()
	if _, err := net.DialTimeout("tcp", ns, time.Second); err == nil {
		t.Fatal("name server still accepts after Stop")
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if c.NameServer() != ns || c.Broker() != br {
		t.Fatalf("addresses moved: %s %s -> %s %s", ns, br, c.NameServer(), c.Broker())
	}
	if len(c.Topics()) != 1 {
		t.Fatalf("topics after restart: %v", c.Topics())
	}
}
