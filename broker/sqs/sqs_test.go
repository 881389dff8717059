package sqs_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/broker/internal/awsconf"
	"github.com/heraldhq/herald/broker/internal/awsmsg"
	"github.com/heraldhq/herald/broker/sqs"
	"github.com/heraldhq/herald/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.NoAWSMetadata()
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// settings are the connection keys of a test server at endpoint.
func settings(endpoint string) awsconf.Settings {
	return awsconf.Settings{Region: testenv.AWSRegion, Endpoint: endpoint,
		AccessKeyID: testenv.AWSAccessKey, SecretAccessKey: testenv.AWSSecretKey}
}

// client is a plain SDK client on endpoint, for the tests' own calls.
func client(endpoint string) *awssqs.Client {
	return awssqs.New(awssqs.Options{Region: testenv.AWSRegion, BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider(testenv.AWSAccessKey, testenv.AWSSecretKey, "")})
}

// createQueue creates a queue named after name (FIFO when fifo) and
// returns its name.
func createQueue(t testing.TB, c *awssqs.Client, name string, fifo bool) string {
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

// queueURL returns the URL of queue name.
func queueURL(t testing.TB, c *awssqs.Client, name string) string {
	t.Helper()
	out, err := c.GetQueueUrl(context.Background(), &awssqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("queue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

// readQueue receives and deletes what queue holds (a second read sees
// only what came after), waiting until want messages came or 5s passed,
// then taking what is still there.
func readQueue(t *testing.T, c *awssqs.Client, name string, want int) []brokertest.Received {
	t.Helper()
	url := queueURL(t, c, name)
	var out []brokertest.Received
	deadline := time.Now().Add(5 * time.Second)
	for {
		wait := int32(1)
		if len(out) >= want || time.Now().After(deadline) {
			wait = 0 // one last look for extras
		}
		resp, err := c.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{QueueUrl: aws.String(url),
			MaxNumberOfMessages: 10, WaitTimeSeconds: wait, VisibilityTimeout: 600,
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
		if strings.HasPrefix(k, sqs.HeaderPrefix) {
			h[k] = v
		}
	}
	for k, v := range ev.Headers {
		h[k] = v
	}
	return brokertest.Received{Destination: queue, Headers: h, Body: ev.Payload,
		MessageID: m.Attributes[string(types.MessageSystemAttributeNameMessageDeduplicationId)]}
}

// TestConformance runs the broker suite against moto_server through a
// fault proxy (the outage test stops and starts the proxy), on standard
// queues and on FIFO queues.
func TestConformance(t *testing.T) {
	srv := testenv.StartMoto(t)
	for _, fifo := range []bool{false, true} {
		name, guarantees := "standard", broker.Guarantees{}
		if fifo {
			name, guarantees = "fifo", sqs.FIFOGuarantees
		}
		t.Run(name, func(t *testing.T) {
			brokertest.Run(t, brokertest.Target{
				Guarantees:   guarantees,
				MessageID:    fifo, // the deduplication id is the event id
				HeaderPrefix: sqs.HeaderPrefix,
				New: func(t *testing.T) *brokertest.Setup {
					px := testenv.StartFaultProxy(t, srv.URL)
					c := client(srv.URL)
					p, err := sqs.New(context.Background(), sqs.Config{Settings: settings(px.URL())})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = p.Close() })
					return &brokertest.Setup{
						Publisher:   p,
						Destination: func(n string) string { return createQueue(t, c, n, fifo) },
						Read: func(t *testing.T, dest string, want int) []brokertest.Received {
							return readQueue(t, c, dest, want)
						},
						Stop:  func(t *testing.T) { px.Stop(t) },
						Start: func(t *testing.T) { px.Start(t) },
					}
				},
			})
		})
	}
}
