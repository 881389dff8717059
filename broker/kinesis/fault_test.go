package kinesis_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/awsconf"
	"github.com/heraldhq/herald/broker/internal/awstest"
	"github.com/heraldhq/herald/broker/kinesis"
	"github.com/heraldhq/herald/internal/testenv"
)

// faultSetup is a publisher behind a fault proxy, and a stream.
func faultSetup(t *testing.T) (*kinesis.Publisher, *testenv.FaultProxy, string) {
	t.Helper()
	srv := testenv.Kinesalite.Start(t)
	px := testenv.StartFaultProxy(t, srv.URL)
	stream := awstest.CreateStream(t, awstest.KinesisClient(t, srv.URL), "fault", 2)
	p, err := kinesis.New(context.Background(), kinesis.Config{Settings: awstest.Settings(px.URL()),
		Publishing: awsconf.Publishing{Parallel: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, px, stream
}

// jsonError is a Kinesis error answer (JSON 1.1 protocol).
func jsonError(code, message string) testenv.Fault {
	return testenv.Fault{Status: 400, ContentType: "application/x-amz-json-1.1",
		Body: `{"__type":"` + code + `","message":"` + message + `"}`}
}

// Rule: PutRecords's per-record results go to their messages: a record
// the shard throttled is a retryable error on that message alone (the
// others get their shard and sequence number), and publishing it again
// alone succeeds.
func TestPerRecordFailureRetriedAlone(t *testing.T) {
	p, px, stream := faultSetup(t)
	px.Inject("PutRecords", 1, testenv.Fault{Rewrite: throttleRecord(1)})
	msgs := []broker.Message{awstest.Message(stream, "a", []byte(`{"n":0}`)), awstest.Message(stream, "b", []byte(`{"n":1}`)), awstest.Message(stream, "c", []byte(`{"n":2}`))}
	res := awstest.Publish(p, msgs...)
	for i, r := range res {
		switch {
		case i == 1:
			if r.Err == nil || herald.IsPermanent(r.Err) || herald.IsUnavailable(r.Err) ||
				!strings.Contains(r.Err.Error(), "ProvisionedThroughputExceededException") {
				t.Errorf("[throttled record: retryable, alone] %v", r.Err)
			}
		case r.Err != nil || r.Receipt.Shard == "" || r.Receipt.MessageID == "" || r.Receipt.Stream != stream:
			t.Errorf("[record stored: shard and sequence as receipt] message %d: %+v", i, r)
		}
	}
	again := awstest.Publish(p, msgs[1])
	if again[0].Err != nil || again[0].Receipt.MessageID == "" {
		t.Errorf("[retried alone] %+v", again[0])
	}
	if n := px.Calls("PutRecords"); n != 2 {
		t.Errorf("%d PutRecords calls, want 2", n)
	}
}

// throttleRecord rewrites a PutRecords answer so that record i failed
// with ProvisionedThroughputExceededException.
func throttleRecord(i int) func(req, resp []byte) []byte {
	return func(_, resp []byte) []byte {
		var out map[string]any
		if json.Unmarshal(resp, &out) != nil {
			return resp
		}
		recs, _ := out["Records"].([]any)
		if i < len(recs) {
			recs[i] = map[string]any{"ErrorCode": "ProvisionedThroughputExceededException",
				"ErrorMessage": "Rate exceeded for shard shardId-000000000001"}
			out["FailedRecordCount"] = 1
		}
		b, _ := json.Marshal(out)
		return b
	}
}

// Rule: a whole call throttled is retryable for every record of it.
func TestThrottledCallIsRetryable(t *testing.T) {
	p, px, stream := faultSetup(t)
	px.Inject("PutRecords", 1, jsonError("LimitExceededException", "Rate exceeded"))
	for i, r := range awstest.Publish(p, awstest.Message(stream, "a", []byte("x")), awstest.Message(stream, "b", []byte("y"))) {
		if r.Err == nil || herald.IsPermanent(r.Err) || herald.IsUnavailable(r.Err) {
			t.Errorf("[throttled call: retryable] message %d: %v", i, r.Err)
		}
	}
}

// Rule: a payload over max_payload fails at once, permanently, naming the
// limit, without a call; a record Kinesis refuses as too large is
// permanent (herald.ErrPayloadTooLarge) too.
func TestOversizeIsPermanent(t *testing.T) {
	p, px, stream := faultSetup(t)
	big := bytes.Repeat([]byte("x"), kinesis.DefaultMaxPayload+1)
	res := awstest.Publish(p, awstest.Message(stream, "a", big))
	if err := res[0].Err; !errors.Is(err, herald.ErrPayloadTooLarge) || !herald.IsPermanent(err) ||
		!strings.Contains(err.Error(), "774144") {
		t.Errorf("[over max_payload: permanent, limit named] %v", err)
	}
	if n := px.Calls("PutRecords"); n != 0 {
		t.Errorf("[refused before sending] %d PutRecords calls", n)
	}
	px.Inject("PutRecords", 1, jsonError("ValidationException",
		"1 validation error detected: Value at 'records.1.member.data' failed to satisfy constraint: Member must have length less than or equal to 1048576"))
	res = awstest.Publish(p, awstest.Message(stream, "a", []byte("x")))
	if err := res[0].Err; !errors.Is(err, herald.ErrPayloadTooLarge) || !herald.IsPermanent(err) {
		t.Errorf("[refused by Kinesis as too large: permanent] %v", err)
	}
}

// Rule: Kinesis not answering is an outage (herald.Unavailable).
func TestServerDownIsUnavailable(t *testing.T) {
	p, px, stream := faultSetup(t)
	px.Stop(t)
	if res := awstest.Publish(p, awstest.Message(stream, "a", []byte("x"))); !herald.IsUnavailable(res[0].Err) {
		t.Errorf("[down: unavailable] %v", res[0].Err)
	}
	if err := p.Ping(context.Background()); !herald.IsUnavailable(err) {
		t.Errorf("[down: ping unavailable] %v", err)
	}
}

// Rule: a record's data is the event as a CloudEvent in JSON, read back
// whole: compact JSON payloads as "data", others base64, user headers
// that are no extension names in heraldheaders.
func TestRecordRoundTrip(t *testing.T) {
	for _, payload := range [][]byte{[]byte(`{"a":[1,2]}`), []byte(" {\"a\": 1}\n"), []byte("\x00\xffbin"), nil} {
		m := awstest.Message("s", "k", payload)
		m.Event.Headers = map[string]string{"traceparent": "00-x", "X-App": "giftwall", "Ce-Id": "copied"}
		m.Event.Tenant, m.Event.CreatedAt = "t1", time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
		data := kinesis.Encode(m, "src")
		ev, err := kinesis.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ev.Payload, payload) || ev.ID != m.Event.ID || ev.Type != "T" || ev.PartitionKey != "k" ||
			ev.Tenant != "t1" || !ev.CreatedAt.Equal(m.Event.CreatedAt) || ev.Headers["traceparent"] != "00-x" ||
			ev.Headers["X-App"] != "giftwall" || ev.Headers[herald.RenamedHeaderPrefix+"ce-id"] != "copied" {
			t.Errorf("payload %q: decoded %+v from %s", payload, ev, data)
		}
		compact := json.Valid(payload) && len(bytes.TrimSpace(payload)) == len(payload) && len(payload) > 0
		if got := bytes.Contains(data, []byte(`"data":`)); got != compact {
			t.Errorf("payload %q: data member %v, want %v: %s", payload, got, compact, data)
		}
	}
}
