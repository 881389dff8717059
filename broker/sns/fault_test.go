package sns_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker/internal/awstest"
	"github.com/heraldhq/herald/broker/sns"
	"github.com/heraldhq/herald/internal/testenv"
)

// xmlError is an SNS error answer (query protocol).
func xmlError(code, message string) testenv.Fault {
	return testenv.Fault{Status: 400, ContentType: "text/xml",
		Body: `<ErrorResponse><Error><Type>Sender</Type><Code>` + code + `</Code><Message>` + message +
			`</Message></Error><RequestId>fault</RequestId></ErrorResponse>`}
}

// faultSetup is a publisher behind a fault proxy, and a topic.
func faultSetup(t *testing.T, cfg sns.Config, fifo bool) (*sns.Publisher, *testenv.FaultProxy, string) {
	t.Helper()
	srv := testenv.Fauxqs.Start(t)
	px := testenv.StartFaultProxy(t, srv.URL)
	arn, _ := awstest.TopicWithQueue(t, srv.URL, "fault", fifo, false)
	cfg.Settings = awstest.Settings(px.URL())
	p, err := sns.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, px, arn
}

// Rule: SNS throttling is retryable; SNS refusing a message as too long
// is permanent (herald.ErrPayloadTooLarge).
func TestThrottlingAndOversize(t *testing.T) {
	p, px, arn := faultSetup(t, sns.Config{}, false)
	px.Inject("PublishBatch", 1, xmlError("Throttling", "Rate exceeded"))
	res := awstest.Publish(p, awstest.Message(arn, "k", []byte(`{}`)))
	if err := res[0].Err; err == nil || herald.IsPermanent(err) || herald.IsUnavailable(err) {
		t.Errorf("[throttled: retryable] %v", err)
	}
	px.Inject("PublishBatch", 1, xmlError("InvalidParameter", "Invalid parameter: Message too long"))
	res = awstest.Publish(p, awstest.Message(arn, "k", []byte(`{}`)))
	if err := res[0].Err; !errors.Is(err, herald.ErrPayloadTooLarge) || !herald.IsPermanent(err) {
		t.Errorf("[too long: permanent] %v", err)
	}
	if res := awstest.Publish(p, awstest.Message(arn, "k", []byte(`{}`))); res[0].Err != nil || res[0].Receipt.MessageID == "" {
		t.Errorf("[next publish] %+v", res[0])
	}
}

// Rule: an event without a partition key to a FIFO topic is refused at
// once naming message_group_id; a topic name without account_id is
// refused naming account_id.
func TestBadDestinations(t *testing.T) {
	p, _, arn := faultSetup(t, sns.Config{}, true)
	res := awstest.Publish(p, awstest.Message(arn, "", []byte(`{}`)), awstest.Message("by-name", "k", []byte(`{}`)))
	if err := res[0].Err; !herald.IsPermanent(err) || !strings.Contains(err.Error(), "message_group_id") {
		t.Errorf("[FIFO, no group] %v", err)
	}
	if err := res[1].Err; !herald.IsPermanent(err) || !strings.Contains(err.Error(), "account_id") {
		t.Errorf("[name without account_id] %v", err)
	}
}
