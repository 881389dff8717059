package stdout_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/broker/stdout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lockedBuffer lets the suite read lines while publishers write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines(t *testing.T) []stdout.Line {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []stdout.Line
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var l stdout.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Bytes(), err)
		}
		out = append(out, l)
	}
	return out
}

// received maps a line back to the CloudEvents headers it stands for.
func received(l stdout.Line) brokertest.Received {
	h := map[string]string{}
	for k, v := range l.Headers {
		h[k] = v
	}
	for k, v := range map[string]string{"specversion": l.SpecVersion, "id": l.ID, "type": l.Type,
		"source": l.Source, "subject": l.Subject, "tenant": l.Tenant, "topic": l.Topic} {
		if v != "" {
			h["ce-"+k] = v
		}
	}
	if !l.Time.IsZero() {
		h["ce-time"] = l.Time.Format(time.RFC3339Nano)
	}
	body := []byte(l.Payload)
	if l.PayloadBase64 != nil {
		body = l.PayloadBase64
	}
	return brokertest.Received{Destination: l.Destination, Headers: h, Body: body}
}

func TestConformance(t *testing.T) {
	brokertest.Run(t, brokertest.Target{
		Guarantees: stdout.New(stdout.Config{Writer: &bytes.Buffer{}}).Guarantees(),
		New: func(t *testing.T) *brokertest.Setup {
			var buf lockedBuffer
			p := stdout.New(stdout.Config{Writer: &buf})
			t.Cleanup(func() { _ = p.Close() })
			return &brokertest.Setup{
				Publisher:   p,
				Destination: func(name string) string { return "test." + name },
				Read: func(t *testing.T, dest string, _ int) []brokertest.Received {
					var out []brokertest.Received
					for _, l := range buf.lines(t) {
						if l.Destination == dest {
							out = append(out, received(l))
						}
					}
					return out
				},
			}
		},
	})
}

func TestJSONPayloadInlineElseBase64(t *testing.T) {
	var buf lockedBuffer
	p := stdout.New(stdout.Config{Writer: &buf, Source: "svc"})
	msgs := []broker.Message{
		{Destination: "d", Event: herald.Event{ID: "1", Topic: "t", Type: "T", Payload: []byte(`{"a": "<b>"}`)}},
		{Destination: "d", Event: herald.Event{ID: "2", Topic: "t", Type: "T", Payload: []byte("not json")}},
	}
	for _, r := range p.Publish(context.Background(), msgs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	out := buf.buf.String()
	want := `{"specversion":"1.0","id":"1","type":"T","source":"svc","topic":"t","destination":"d","payload":{"a":"<b>"}}
{"specversion":"1.0","id":"2","type":"T","source":"svc","topic":"t","destination":"d","payload_base64":"bm90IGpzb24="}
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrorFailsRestOfBatch(t *testing.T) {
	p := stdout.New(stdout.Config{Writer: failingWriter{}})
	msgs := []broker.Message{
		{Destination: "d", Event: herald.Event{ID: "1", Topic: "t", Type: "T"}},
		{Destination: "d", Event: herald.Event{ID: "2", Topic: "t", Type: "T"}},
	}
	for i, r := range p.Publish(context.Background(), msgs) {
		if r.Err == nil || herald.IsPermanent(r.Err) {
			t.Errorf("message %d: %v, want a retryable error", i, r.Err)
		}
	}
}
