package sqs_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/internal/awstest"
	"github.com/heraldhq/herald/broker/sqs"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector/projectortest"
)

// crashSource is what a crash child subscribes to.
type crashSource struct {
	Endpoint string `json:"endpoint"`
	Queue    string `json:"queue"`
}

func init() {
	if projectortest.IsCrashChild() {
		testenv.NoAWSMetadata()
		projectortest.CrashChild(func(raw json.RawMessage, _ projectortest.Store) (broker.Subscriber, error) {
			var src crashSource
			if err := json.Unmarshal(raw, &src); err != nil {
				return nil, err
			}
			return sqs.NewSubscriber(context.Background(), sqs.SubscriberConfig{Settings: awstest.Settings(src.Endpoint),
				Queue: src.Queue, WaitTime: time.Second, VisibilityTimeout: 3 * time.Second})
		})
	}
}

// subscribe opens a subscriber on queue with a short long poll.
func subscribe(tb testing.TB, endpoint, queue string, visibility time.Duration) broker.Subscriber {
	tb.Helper()
	s, err := sqs.NewSubscriber(context.Background(), sqs.SubscriberConfig{Settings: awstest.Settings(endpoint), Queue: queue,
		WaitTime: time.Second, VisibilityTimeout: visibility})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// publisher returns a publisher on endpoint, closed when the test ends.
func publisher(tb testing.TB, endpoint string) *sqs.Publisher {
	tb.Helper()
	p, err := sqs.New(context.Background(), sqs.Config{Settings: awstest.Settings(endpoint)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// TestSubscriberProjects10k projects 10,000 events from one queue (a
// standard one and a FIFO one, whose order per key the suite checks),
// consumed by two projector processes, into a counting read model.
func TestSubscriberProjects10k(t *testing.T) {
	srv := testenv.Fauxqs.Start(t)
	c := awstest.SQSClient(t, srv.URL)
	p := publisher(t, srv.URL)
	for _, fifo := range []bool{false, true} {
		name := map[bool]string{false: "standard", true: "fifo"}[fifo]
		t.Run(name, func(t *testing.T) {
			queue := awstest.CreateQueue(t, c, "sub", fifo)
			projectortest.RunSource(t, projectortest.SourceConfig{
				Subscribe: func(tb testing.TB) broker.Subscriber { return subscribe(tb, srv.URL, queue, 30*time.Second) },
				Publish:   awstest.PublishTo(p, queue),
				KeyOrder:  fifo,
			})
		})
	}
}

// TestSubscriberKilledAfterCommitBeforeAck: a projector process is killed
// with SIGKILL after its ledger commit and before the delete; the message
// reappears after its visibility timeout, a new subscriber applies it
// zero more times and deletes it.
func TestSubscriberKilledAfterCommitBeforeAck(t *testing.T) {
	srv := testenv.Fauxqs.Start(t)
	queue := awstest.CreateQueue(t, awstest.SQSClient(t, srv.URL), "crash", false)
	projectortest.RunKilledBeforeAck(t, projectortest.KilledConfig{
		Child:   crashSource{Endpoint: srv.URL, Queue: queue},
		Publish: awstest.PublishTo(publisher(t, srv.URL), queue),
		Subscribe: func(tb testing.TB, _ projectortest.Store) broker.Subscriber {
			return subscribe(tb, srv.URL, queue, 3*time.Second)
		},
	})
	if got := awstest.ReadQueue(t, awstest.SQSClient(t, srv.URL), queue, 0); len(got) != 0 {
		t.Errorf("[deleted after the ack] the queue still holds %d messages", len(got))
	}
}

// TestSubscriberForwardedEventsOnce: rows that copied an incoming
// CloudEvent's ce-id and ce-type (varied case), relayed to SQS, are each
// projected once under their own id.
func TestSubscriberForwardedEventsOnce(t *testing.T) {
	srv := testenv.Fauxqs.Start(t)
	queue := awstest.CreateQueue(t, awstest.SQSClient(t, srv.URL), "fwd", false)
	projectortest.RunForwarded(t, projectortest.ForwardedConfig{
		Subscribe:   func(tb testing.TB) broker.Subscriber { return subscribe(tb, srv.URL, queue, 30*time.Second) },
		Publisher:   publisher(t, srv.URL),
		Destination: queue, HeaderPrefix: sqs.HeaderPrefix,
	})
}

// TestSubscriberRawCollidingOnce: messages another producer sent naming
// the id and type twice (ce-id and, in another case, a forwarded event's)
// are each read by the exact spelling and applied once under their own id.
func TestSubscriberRawCollidingOnce(t *testing.T) {
	srv := testenv.Fauxqs.Start(t)
	c := awstest.SQSClient(t, srv.URL)
	queue := awstest.CreateQueue(t, c, "raw", false)
	url := awstest.QueueURL(t, c, queue)
	projectortest.RunRawColliding(t, projectortest.RawConfig{
		Subscribe: func(tb testing.TB) broker.Subscriber { return subscribe(tb, srv.URL, queue, 30*time.Second) },
		Publish: func(tb testing.TB, msgs []projectortest.RawMessage) {
			for _, m := range msgs {
				attrs := map[string]types.MessageAttributeValue{}
				for k, v := range m.Headers {
					attrs[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
				}
				if _, err := c.SendMessage(context.Background(), &awssqs.SendMessageInput{QueueUrl: aws.String(url),
					MessageBody: aws.String(string(m.Body)), MessageAttributes: attrs}); err != nil {
					tb.Fatal(err)
				}
			}
		},
		HeaderPrefix: sqs.HeaderPrefix,
	})
}

// TestSubscriberExtendsVisibility: a message held (being applied) three
// times longer than the visibility timeout is not handed to another
// consumer meanwhile: the subscriber extends its visibility; once acked it
// is gone.
func TestSubscriberExtendsVisibility(t *testing.T) {
	srv := testenv.Fauxqs.Start(t)
	queue := awstest.CreateQueue(t, awstest.SQSClient(t, srv.URL), "extend", false)
	awstest.PublishTo(publisher(t, srv.URL), queue)(t, []herald.Event{projectortest.Event("k", 1)})
	holder := subscribe(t, srv.URL, queue, 2*time.Second)
	t.Cleanup(func() { _ = holder.Close() })
	got, err := holder.Receive(context.Background(), 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(got))
	}
	other := subscribe(t, srv.URL, queue, 2*time.Second)
	t.Cleanup(func() { _ = other.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second) // 3 visibility timeouts
	stolen, err := other.Receive(ctx, 10)
	cancel()
	if len(stolen) != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("[extended] another consumer got %d messages (%v) while the first held it", len(stolen), err)
	}
	if err := got[0].Ack(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := awstest.ReadQueue(t, awstest.SQSClient(t, srv.URL), queue, 0); len(left) != 0 {
		t.Errorf("[deleted on ack] %d messages left", len(left))
	}
}
