package kinesis_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/broker/internal/awstest"
	"github.com/heraldhq/herald/broker/kinesis"
	"github.com/heraldhq/herald/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.NoAWSMetadata()
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// decode reads a record for the suite: its CloudEvent's attributes as
// ce- headers, its payload as the body, its partition key as the key.
func decode(t *testing.T, r types.Record) brokertest.Received {
	t.Helper()
	h, err := kinesis.Attributes(r.Data)
	if err != nil {
		t.Fatalf("record %s: %v", aws.ToString(r.SequenceNumber), err)
	}
	ev, err := kinesis.Decode(r.Data)
	if err != nil {
		t.Fatalf("record %s: %v", aws.ToString(r.SequenceNumber), err)
	}
	return brokertest.Received{Headers: h, Body: ev.Payload, Key: aws.ToString(r.PartitionKey)}
}

// TestConformance runs the broker suite against kinesalite through a
// fault proxy (the outage test stops and starts the proxy), on streams of
// two shards.
func TestConformance(t *testing.T) {
	srv := testenv.Kinesalite.Start(t)
	brokertest.Run(t, brokertest.Target{
		Guarantees:     (&kinesis.Publisher{}).Guarantees(),
		Key:            true,
		HeaderPrefix:   kinesis.HeaderPrefix,
		PublishTimeout: 30 * time.Second,
		New: func(t *testing.T) *brokertest.Setup {
			px := testenv.StartFaultProxy(t, srv.URL)
			c := awstest.KinesisClient(t, srv.URL)
			p, err := kinesis.New(context.Background(), kinesis.Config{Settings: awstest.Settings(px.URL())})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Close() })
			return &brokertest.Setup{
				Publisher:   p,
				Destination: func(n string) string { return awstest.CreateStream(t, c, n, 2) },
				Read: func(t *testing.T, dest string, want int) []brokertest.Received {
					return awstest.ReadStream(t, c, dest, want, decode)
				},
				Stop:  func(t *testing.T) { px.Stop(t) },
				Start: func(t *testing.T) { px.Start(t) },
			}
		},
	})
}
