package sqs_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/broker/internal/awstest"
	"github.com/heraldhq/herald/broker/sqs"
	"github.com/heraldhq/herald/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.NoAWSMetadata()
	goleak.VerifyTestMain(m, testenv.LeakOptions()...)
}

// TestConformance runs the broker suite against fauxqs through a
// fault proxy (the outage test stops and starts the proxy), on standard
// queues and on FIFO queues.
func TestConformance(t *testing.T) {
	srv := testenv.Fauxqs.Start(t)
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
					c := awstest.SQSClient(t, srv.URL)
					p, err := sqs.New(context.Background(), sqs.Config{Settings: awstest.Settings(px.URL())})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = p.Close() })
					return &brokertest.Setup{
						Publisher:   p,
						Destination: func(n string) string { return awstest.CreateQueue(t, c, n, fifo) },
						Read: func(t *testing.T, dest string, want int) []brokertest.Received {
							return awstest.ReadQueue(t, c, dest, want)
						},
						Stop:  func(t *testing.T) { px.Stop(t) },
						Start: func(t *testing.T) { px.Start(t) },
					}
				},
			})
		})
	}
}
