package sqs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/awsconf"
	"github.com/heraldhq/herald/broker/internal/awstest"
	"github.com/heraldhq/herald/broker/sqs"
	"github.com/heraldhq/herald/internal/testenv"
)

// jsonError is an SQS error answer in its JSON protocol.
func jsonError(status int, code, message string) testenv.Fault {
	return testenv.Fault{Status: status, ContentType: "application/x-amz-json-1.0",
		Body: `{"__type":"com.amazonaws.sqs#` + code + `","message":"` + message + `"}`}
}

// faultSetup is a publisher behind a fault proxy and a queue.
func faultSetup(t *testing.T, cfg sqs.Config, fifo bool) (*sqs.Publisher, *testenv.FaultProxy, string, string) {
	t.Helper()
	srv := testenv.Fauxqs.Start(t)
	px := testenv.StartFaultProxy(t, srv.URL)
	queue := awstest.CreateQueue(t, awstest.SQSClient(t, srv.URL), "fault", fifo)
	cfg.Settings = awstest.Settings(px.URL())
	p, err := sqs.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, px, srv.URL, queue
}

// Rule: SQS throttling a batch call is a retryable error (neither
// permanent nor an outage), and the next try goes through.
func TestThrottlingIsRetryable(t *testing.T) {
	p, px, _, queue := faultSetup(t, sqs.Config{Publishing: awsconf.Publishing{Parallel: 1}}, false)
	px.Inject("SendMessageBatch", 1, jsonError(400, "ThrottlingException", "Rate exceeded"))
	res := awstest.Publish(p, awstest.Message(queue, "k", []byte("a")), awstest.Message(queue, "j", []byte("b")))
	for i, r := range res {
		if r.Err == nil || herald.IsPermanent(r.Err) || herald.IsUnavailable(r.Err) || !strings.Contains(r.Err.Error(), "ThrottlingException") {
			t.Errorf("[throttled: retryable] message %d: %v", i, r.Err)
		}
	}
	if res := awstest.Publish(p, awstest.Message(queue, "k", []byte("a"))); res[0].Err != nil || res[0].Receipt.MessageID == "" {
		t.Errorf("[throttled: next try goes] %+v", res[0])
	}
}

// Rule: a payload over max_payload is refused at once, permanently, naming
// the limit, without a call; one SQS itself refuses as too long is
// permanent too (herald.ErrPayloadTooLarge) and names SQS's reason.
func TestOversizeIsPermanent(t *testing.T) {
	p, px, _, queue := faultSetup(t, sqs.Config{Publishing: awsconf.Publishing{MaxPayload: 1000}}, false)
	res := awstest.Publish(p, awstest.Message(queue, "k", bytes.Repeat([]byte("x"), 1001)))
	if err := res[0].Err; !errors.Is(err, herald.ErrPayloadTooLarge) || !herald.IsPermanent(err) ||
		!strings.Contains(err.Error(), "1001") || !strings.Contains(err.Error(), "1000") {
		t.Errorf("[over max_payload: permanent, limit named] %v", err)
	}
	if n := px.Calls("SendMessageBatch"); n != 0 {
		t.Errorf("[refused before sending] %d SendMessageBatch calls", n)
	}
	px.Inject("SendMessageBatch", 1, jsonError(400, "InvalidParameterValue",
		"One or more parameters are invalid. Reason: Message must be shorter than 262144 bytes."))
	res = awstest.Publish(p, awstest.Message(queue, "k", []byte("small enough here, not there")))
	if err := res[0].Err; !errors.Is(err, herald.ErrPayloadTooLarge) || !herald.IsPermanent(err) || !strings.Contains(err.Error(), "262144") {
		t.Errorf("[refused by SQS as too long: permanent] %v", err)
	}
}

// Rule: each entry of a SendMessageBatch answer goes to its own message:
// the ones SQS took get their message id, one it refused its own error
// (here too long: permanent), and the later message of the refused one's
// key in the next call is held back.
func TestBatchEntriesMapToMessages(t *testing.T) {
	p, px, _, queue := faultSetup(t, sqs.Config{Publishing: awsconf.Publishing{Parallel: 1}}, false)
	px.Inject("SendMessageBatch", 1, testenv.Fault{Rewrite: failEntry("1", "InvalidParameterValue",
		"One or more parameters are invalid. Reason: Message must be shorter than 262144 bytes.")})
	msgs := make([]broker.Message, 12) // two calls: 10, then 2
	for i := range msgs {
		msgs[i] = awstest.Message(queue, []string{"a", "b", "c"}[i%3], []byte("m"))
	}
	res := awstest.Publish(p, msgs...)
	for i, r := range res {
		switch {
		case i == 1:
			if !herald.IsPermanent(r.Err) || !errors.Is(r.Err, herald.ErrPayloadTooLarge) {
				t.Errorf("[entry refused] message 1: %v", r.Err)
			}
		case i == 10: // key b, after the refused one, in the second call
			if r.Err == nil || herald.IsPermanent(r.Err) {
				t.Errorf("[held back] message 10: %v, want a retryable error", r.Err)
			}
		case r.Err != nil || r.Receipt.MessageID == "":
			t.Errorf("[entry taken] message %d: %+v", i, r)
		}
	}
}

// failEntry rewrites a SendMessageBatch answer so that entry id is among
// the failed ones with code and message.
func failEntry(id, code, message string) func(req, resp []byte) []byte {
	return func(_, resp []byte) []byte {
		var out struct {
			Successful []map[string]any `json:"Successful"`
			Failed     []map[string]any `json:"Failed"`
		}
		if json.Unmarshal(resp, &out) != nil {
			return resp
		}
		var kept []map[string]any
		for _, s := range out.Successful {
			if s["Id"] == id {
				out.Failed = append(out.Failed, map[string]any{"Id": id, "Code": code, "Message": message, "SenderFault": true})
				continue
			}
			kept = append(kept, s)
		}
		out.Successful = kept
		b, _ := json.Marshal(out)
		return b
	}
}

// Rule: SQS not answering at all (connections refused) is an outage
// (herald.Unavailable): the relay's breaker opens and no attempt is spent.
func TestServerDownIsUnavailable(t *testing.T) {
	p, px, _, queue := faultSetup(t, sqs.Config{}, false)
	px.Stop(t)
	res := awstest.Publish(p, awstest.Message(queue, "k", []byte("a")))
	if !herald.IsUnavailable(res[0].Err) {
		t.Errorf("[down: unavailable] %v", res[0].Err)
	}
	if err := p.Ping(context.Background()); !herald.IsUnavailable(err) {
		t.Errorf("[down: ping unavailable] %v", err)
	}
	px.Start(t)
	if err := p.Ping(context.Background()); err != nil {
		t.Errorf("[back: ping] %v", err)
	}
}

// Rule: an event without a partition key to a FIFO queue fails at once,
// permanently, naming message_group_id, unless the entry sets one.
func TestFIFOWithoutGroup(t *testing.T) {
	p, _, endpoint, queue := faultSetup(t, sqs.Config{}, true)
	res := awstest.Publish(p, awstest.Message(queue, "", []byte("a")))
	if err := res[0].Err; !herald.IsPermanent(err) || !strings.Contains(err.Error(), "message_group_id") {
		t.Errorf("[FIFO, no group: permanent, key named] %v", err)
	}
	grouped, err := sqs.New(context.Background(), sqs.Config{Settings: awstest.Settings(endpoint), MessageGroupID: "all"})
	if err != nil {
		t.Fatal(err)
	}
	defer grouped.Close()
	if res := awstest.Publish(grouped, awstest.Message(queue, "", []byte("a"))); res[0].Err != nil {
		t.Errorf("[FIFO with message_group_id] %v", res[0].Err)
	}
}

// Rule: with no credentials anywhere, New fails with a ConfigError naming
// access_key_id (herald run exits 2 on it); without a region, naming region.
func TestMissingCredentialsOrRegion(t *testing.T) {
	testenv.NoAWSCredentials(t)
	_, err := sqs.New(context.Background(), sqs.Config{Settings: awstest.Settings("http://127.0.0.1:1")})
	if err != nil {
		t.Fatalf("static credentials: %v", err)
	}
	s := awstest.Settings("http://127.0.0.1:1")
	s.AccessKeyID, s.SecretAccessKey = "", ""
	_, err = sqs.New(context.Background(), sqs.Config{Settings: s})
	var ce *broker.ConfigError
	if !errors.As(err, &ce) || ce.Key != "access_key_id" {
		t.Errorf("[no credentials: config error naming access_key_id] %v", err)
	}
	s = awstest.Settings("http://127.0.0.1:1")
	s.Region = ""
	_, err = sqs.New(context.Background(), sqs.Config{Settings: s})
	if !errors.As(err, &ce) || ce.Key != "region" {
		t.Errorf("[no region: config error naming region] %v", err)
	}
}
