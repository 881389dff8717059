package sns_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/broker/internal/awstest"
	"github.com/heraldhq/herald/broker/sns"
	"github.com/heraldhq/herald/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.NoAWSMetadata()
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// motoAccount is the account moto_server's resources belong to.
const motoAccount = "123456789012"

// TestConformance runs the broker suite against moto_server through a
// fault proxy (the outage test stops and starts the proxy), on standard
// and FIFO topics, reading back through an SQS queue subscribed with raw
// message delivery. The destination is the topic's name (its ARN built
// from account_id). moto does not implement a FIFO topic's own
// deduplication: what the dedupe rule sees dropped there is dropped by the
// FIFO queue subscribed, which gets the same MessageDeduplicationId.
func TestConformance(t *testing.T) {
	srv := testenv.StartMoto(t)
	for _, fifo := range []bool{false, true} {
		name, guarantees := "standard", broker.Guarantees{}
		if fifo {
			name, guarantees = "fifo", sns.FIFOGuarantees
		}
		t.Run(name, func(t *testing.T) {
			brokertest.Run(t, brokertest.Target{
				Guarantees: guarantees, MessageID: fifo, HeaderPrefix: sns.HeaderPrefix,
				// moto is slow (tens of ms a call, a FIFO topic fans out
				// to its queue message by message).
				PublishTimeout: time.Minute,
				New: func(t *testing.T) *brokertest.Setup {
					px := testenv.StartFaultProxy(t, srv.URL)
					p, err := sns.New(context.Background(), sns.Config{Settings: awstest.Settings(px.URL()), AccountID: motoAccount})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = p.Close() })
					queues := map[string]string{}
					return &brokertest.Setup{
						Publisher: p,
						Destination: func(n string) string {
							arn, queue := awstest.TopicWithQueue(t, srv.URL, n, fifo, false)
							topic := arn[strings.LastIndex(arn, ":")+1:]
							queues[topic] = queue
							return topic
						},
						Read: func(t *testing.T, dest string, want int) []brokertest.Received {
							got := awstest.ReadQueue(t, awstest.SQSClient(t, srv.URL), queues[dest], want)
							for i := range got {
								got[i].Destination = dest
							}
							return got
						},
						Stop:  func(t *testing.T) { px.Stop(t) },
						Start: func(t *testing.T) { px.Start(t) },
					}
				},
			})
		})
	}
}
