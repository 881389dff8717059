package relay

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awskinesis "github.com/aws/aws-sdk-go-v2/service/kinesis"
	kintypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/awsconf"
	"github.com/heraldhq/herald/broker/kinesis"
	"github.com/heraldhq/herald/broker/sns"
	"github.com/heraldhq/herald/broker/sqs"
	"github.com/heraldhq/herald/internal/testenv"
)

// The AWS brokers' outages: the emulators keep their data in memory, so
// the outage is a fault proxy in front of them that refuses connections
// (and cuts the open ones) for brokerDownFor: to the publisher, the
// service is gone.

// awsOpts are the SDK options of the tests' own clients on endpoint.
func awsOpts(endpoint string) (string, aws.CredentialsProvider, *string) {
	return testenv.AWSRegion, credentials.NewStaticCredentialsProvider(testenv.AWSAccessKey, testenv.AWSSecretKey, ""),
		aws.String(endpoint)
}

// awsSettings are the adapters' connection keys for a test server.
func awsSettings(endpoint, region string) awsconf.Settings {
	return awsconf.Settings{Region: region, Endpoint: endpoint, AccessKeyID: testenv.AWSAccessKey, SecretAccessKey: testenv.AWSSecretKey}
}

func sqsClient(endpoint string) *awssqs.Client {
	region, creds, base := awsOpts(endpoint)
	return awssqs.New(awssqs.Options{Region: region, Credentials: creds, BaseEndpoint: base})
}

// newQueue creates a standard queue and returns its URL.
func newQueue(t *testing.T, c *awssqs.Client) string {
	t.Helper()
	out, err := c.CreateQueue(context.Background(), &awssqs.CreateQueueInput{QueueName: aws.String(testenv.Name("herald-down"))})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

// queueEventIDs drains a queue and returns the ce-id of every message.
//
// Each batch is deleted once read, with a short visibility timeout and no
// SDK retries on the receive: if an answer is lost on a loaded machine
// (the SDK would retry and the emulator would hand out the next batch,
// hiding the first for the whole timeout), its messages come back within
// drainVisibility. The drain ends once the queue has answered empty for
// longer than that, so no hidden batch is missed.
func queueEventIDs(t *testing.T, c *awssqs.Client, url string) []string {
	t.Helper()
	const drainVisibility = 5 // seconds
	ctx := context.Background()
	noRetry := func(o *awssqs.Options) { o.RetryMaxAttempts = 1 }
	var ids []string
	for lastSeen := time.Now(); time.Since(lastSeen) < 2*drainVisibility*time.Second; {
		out, err := c.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			VisibilityTimeout: drainVisibility, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}}, noRetry)
		if err != nil {
			t.Logf("receive (its batch comes back after the visibility timeout): %v", err)
			continue
		}
		if len(out.Messages) == 0 {
			continue
		}
		lastSeen = time.Now()
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			ids = append(ids, aws.ToString(m.MessageAttributes[sqs.HeaderPrefix+"id"].StringValue))
			entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		if _, err := c.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// Rule: SQS unreachable for 15s under a lane with max_attempts 3 costs no
// event: the breaker holds the lane, no attempt is spent.
func TestBrokerDownSQS(t *testing.T) {
	srv := testenv.Fauxqs.Start(t)
	px := testenv.StartFaultProxy(t, srv.URL)
	c := sqsClient(srv.URL)
	url := newQueue(t, c)
	region, _, _ := awsOpts("")
	p, err := sqs.New(context.Background(), sqs.Config{Settings: awsSettings(px.URL(), region)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	runBrokerDown(t, outageTarget{pub: p, dest: broker.MustParseTemplate(url), stop: px.Stop, start: px.Start,
		read: func(t *testing.T) []string { return queueEventIDs(t, c, url) }})
}

// Rule: SNS unreachable for 15s costs no event; what the topic took is
// read back through its SQS subscription.
func TestBrokerDownSNS(t *testing.T) {
	srv := testenv.Fauxqs.Start(t)
	px := testenv.StartFaultProxy(t, srv.URL)
	c := sqsClient(srv.URL)
	url := newQueue(t, c)
	region, creds, base := awsOpts(srv.URL)
	sn := awssns.New(awssns.Options{Region: region, Credentials: creds, BaseEndpoint: base})
	ctx := context.Background()
	topic, err := sn.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String(testenv.Name("herald-down"))})
	if err != nil {
		t.Fatal(err)
	}
	qa, err := c.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sn.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
		Endpoint:   aws.String(qa.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]),
		Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatal(err)
	}
	p, err := sns.New(ctx, sns.Config{Settings: awsSettings(px.URL(), region)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	runBrokerDown(t, outageTarget{pub: p, dest: broker.MustParseTemplate(aws.ToString(topic.TopicArn)), stop: px.Stop, start: px.Start,
		read: func(t *testing.T) []string { return queueEventIDs(t, c, url) }})
}

// Rule: Kinesis unreachable for 15s costs no event.
func TestBrokerDownKinesis(t *testing.T) {
	srv := testenv.Kinesalite.Start(t)
	px := testenv.StartFaultProxy(t, srv.URL)
	region, creds, base := awsOpts(srv.URL)
	c := awskinesis.New(awskinesis.Options{Region: region, Credentials: creds, BaseEndpoint: base})
	stream := testenv.Name("herald-down")
	ctx := context.Background()
	if _, err := c.CreateStream(ctx, &awskinesis.CreateStreamInput{StreamName: aws.String(stream), ShardCount: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the stream active", func() bool {
		out, err := c.DescribeStreamSummary(ctx, &awskinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
		return err == nil && out.StreamDescriptionSummary.StreamStatus == kintypes.StreamStatusActive
	})
	p, err := kinesis.New(ctx, kinesis.Config{Settings: awsSettings(px.URL(), region)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	runBrokerDown(t, outageTarget{pub: p, dest: broker.MustParseTemplate(stream), stop: px.Stop, start: px.Start,
		read: func(t *testing.T) []string { return streamEventIDs(t, c, stream) }})
}

// streamEventIDs reads a one-shard stream from its start and returns the
// event ids of its records.
func streamEventIDs(t *testing.T, c *awskinesis.Client, stream string) []string {
	t.Helper()
	ctx := context.Background()
	it, err := c.GetShardIterator(ctx, &awskinesis.GetShardIteratorInput{StreamName: aws.String(stream),
		ShardId: aws.String("shardId-000000000000"), ShardIteratorType: kintypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for iter := it.ShardIterator; iter != nil; {
		out, err := c.GetRecords(ctx, &awskinesis.GetRecordsInput{ShardIterator: iter})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Records) == 0 {
			return ids
		}
		for _, r := range out.Records {
			ev, err := kinesis.Decode(r.Data)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, ev.ID)
		}
		iter = out.NextShardIterator
	}
	return ids
}
