package rmqfake

import (
	"encoding/binary"
	"encoding/json"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald/internal/testenv"
)

// The official client (client_test.go) leaves goroutines that are not the
// fake's; testenv.LeakOptions names them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testenv.LeakOptions()...) }

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

// dialRaw opens a connection to addr, closed when the test ends; a
// heartbeat's membership lasts as long as its connection.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	return conn
}

func writeRaw(t *testing.T, conn net.Conn, frame []byte) {
	t.Helper()
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
}

// readAnswer reads the next frame on conn.
func readAnswer(t *testing.T, conn net.Conn) *Command {
	t.Helper()
	resp, err := ReadCommand(conn)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return resp
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
