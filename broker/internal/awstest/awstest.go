// Package awstest holds what the tests of the AWS adapters share: the
// connection keys and SDK clients of a test server, queues to create and
// read back as brokertest sees them.
package awstest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/broker/awsconf"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/broker/internal/awsmsg"
	"github.com/heraldhq/herald/internal/testenv"
)

// Settings are the connection keys of a test server at endpoint.
func Settings(endpoint string) awsconf.Settings {
	return awsconf.Settings{Region: testenv.AWSRegion, Endpoint: endpoint,
		AccessKeyID: testenv.AWSAccessKey, SecretAccessKey: testenv.AWSSecretKey}
}

// SQSClient is a plain SDK client on endpoint, for the tests' own calls.
func SQSClient(t testing.TB, endpoint string) *awssqs.Client {
	return awssqs.New(awssqs.Options{Region: testenv.AWSRegion, BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider(testenv.AWSAccessKey, testenv.AWSSecretKey, ""),
		HTTPClient:  httpClient(t)})
}

// httpClient is an HTTP client whose connections close when t ends.
func httpClient(t testing.TB) *http.Client {
	tr := awshttp.NewBuildableClient().GetTransport()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// CreateQueue creates a queue named after name (FIFO when fifo) and
// returns its name.
func CreateQueue(t testing.TB, c *awssqs.Client, name string, fifo bool) string {
	t.Helper()
	q := testenv.Name("herald-" + name)
	attrs := map[string]string{}
	if fifo {
		q += ".fifo"
		attrs["FifoQueue"] = "true"
	}
	if _, err := c.CreateQueue(context.Background(), &awssqs.CreateQueueInput{QueueName: aws.String(q), Attributes: attrs}); err != nil {
		t.Fatalf("create queue %s: %v", q, err)
	}
	return q
}

// QueueURL returns the URL of queue name.
func QueueURL(t testing.TB, c *awssqs.Client, name string) string {
	t.Helper()
	out, err := c.GetQueueUrl(context.Background(), &awssqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("queue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

// ReadQueue receives and deletes what queue holds (a second read sees
// only what came after), waiting until want messages came or 5s passed,
// then taking what is still there.
func ReadQueue(t *testing.T, c *awssqs.Client, name string, want int) []brokertest.Received {
	t.Helper()
	url := QueueURL(t, c, name)
	var out []brokertest.Received
	deadline := time.Now().Add(30 * time.Second) // only waited out when messages are missing; SNS fan-out lags under load
	for {
		wait := int32(1)
		if len(out) >= want || time.Now().After(deadline) {
			wait = 0 // one last look for extras
		}
		resp, err := c.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(url),
			// Every message received is deleted at once, so the visibility
			// timeout matters only if the emulator keeps a FIFO group locked
			// after the delete: seen under load (most of a concurrent
			// publish unread for 30 s); a short one lets the group go on.
			MaxNumberOfMessages: 10, WaitTimeSeconds: wait, VisibilityTimeout: 5,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
		if err != nil {
			t.Fatalf("receive from %s: %v", name, err)
		}
		for _, m := range resp.Messages {
			out = append(out, received(t, name, m))
			// Deleted: a FIFO queue hands out no more of a group while one
			// of its messages is in flight.
			if _, err := c.DeleteMessage(context.Background(), &awssqs.DeleteMessageInput{QueueUrl: aws.String(url),
				ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("delete from %s: %v", name, err)
			}
		}
		if wait == 0 && len(resp.Messages) == 0 {
			return out
		}
	}
}

// received decodes one SQS message as a consumer would (awsmsg.Decode:
// packed headers and base64 bodies undone), for the suite.
func received(t *testing.T, queue string, m types.Message) brokertest.Received {
	t.Helper()
	attrs := map[string]string{}
	for k, v := range m.MessageAttributes {
		attrs[k] = aws.ToString(v.StringValue)
	}
	ev, err := awsmsg.Decode(attrs, aws.ToString(m.Body))
	if err != nil {
		t.Fatalf("decode message %s: %v", aws.ToString(m.MessageId), err)
	}
	h := map[string]string{}
	for k, v := range attrs {
		if strings.HasPrefix(k, awsmsg.HeaderPrefix) {
			h[k] = v
		}
	}
	for k, v := range ev.Headers {
		h[k] = v
	}
	return brokertest.Received{Destination: queue, Headers: h, Body: ev.Payload,
		MessageID: m.Attributes[string(types.MessageSystemAttributeNameMessageDeduplicationId)]}
}

// SNSClient is a plain SNS client on endpoint.
func SNSClient(t testing.TB, endpoint string) *awssns.Client {
	return awssns.New(awssns.Options{Region: testenv.AWSRegion, BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider(testenv.AWSAccessKey, testenv.AWSSecretKey, ""),
		HTTPClient:  httpClient(t)})
}

// TopicWithQueue creates a topic named after name (FIFO when fifo) and a
// queue subscribed to it (FIFO too), with raw message delivery unless
// enveloped; it returns the topic's ARN and the queue's name.
func TopicWithQueue(t testing.TB, endpoint, name string, fifo, enveloped bool) (topicARN, queue string) {
	t.Helper()
	ctx := context.Background()
	sq, sn := SQSClient(t, endpoint), SNSClient(t, endpoint)
	queue = CreateQueue(t, sq, name, fifo)
	topic := testenv.Name("herald-" + name)
	attrs := map[string]string{}
	if fifo {
		topic += ".fifo"
		attrs["FifoTopic"] = "true"
	}
	created, err := sn.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String(topic), Attributes: attrs})
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	qa, err := sq.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(QueueURL(t, sq, queue)),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = sn.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: created.TopicArn, Protocol: aws.String("sqs"),
		Endpoint:   aws.String(qa.Attributes[string(types.QueueAttributeNameQueueArn)]),
		Attributes: map[string]string{"RawMessageDelivery": fmt.Sprint(!enveloped)}})
	if err != nil {
		t.Fatalf("subscribe %s to %s: %v", queue, topic, err)
	}
	return aws.ToString(created.TopicArn), queue
}
