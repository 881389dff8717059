package sns_test

import (
	"context"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

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

// emulatorAccount is the account fauxqs's resources belong to.
const emulatorAccount = "000000000000"

// memberKey matches a batch entry's form key, for its index.
var memberKey = regexp.MustCompile(`^PublishBatchRequestEntries\.member\.(\d+)\.`)

// membersInOrder rewrites a PublishBatch body so that its entries come in
// the order of their indexes. The SDK writes the form's keys sorted as
// strings (member.1, member.10, member.2, …); SNS reads entries by index,
// fauxqs in the order their keys come, which would scramble a FIFO
// topic's order within a call of more than nine entries.
func membersInOrder(body []byte) []byte {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return body
	}
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	index := func(k string) int {
		if m := memberKey.FindStringSubmatch(k); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
		return 0
	}
	sort.SliceStable(keys, func(i, j int) bool {
		if a, b := index(keys[i]), index(keys[j]); a != b {
			return a < b
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(k) + "=" + url.QueryEscape(form.Get(k)))
	}
	return []byte(b.String())
}

// TestConformance runs the broker suite against fauxqs through a fault
// proxy (the outage test stops and starts the proxy), on standard and FIFO
// topics, reading back through an SQS queue subscribed with raw message
// delivery. The destination is the topic's name (its ARN built from
// account_id). fauxqs passes a FIFO topic's MessageDeduplicationId on to
// the FIFO queue subscribed, which drops the republished event: the
// dedupe rule sees the pair's deduplication, not the topic's alone.
func TestConformance(t *testing.T) {
	srv := testenv.Fauxqs.Start(t)
	for _, fifo := range []bool{false, true} {
		name, guarantees := "standard", broker.Guarantees{}
		if fifo {
			name, guarantees = "fifo", sns.FIFOGuarantees
		}
		t.Run(name, func(t *testing.T) {
			brokertest.Run(t, brokertest.Target{
				Guarantees: guarantees, MessageID: fifo, HeaderPrefix: sns.HeaderPrefix,
				New: func(t *testing.T) *brokertest.Setup {
					px := testenv.StartFaultProxy(t, srv.URL)
					px.RewriteRequests("PublishBatch", membersInOrder)
					p, err := sns.New(context.Background(), sns.Config{Settings: awstest.Settings(px.URL()), AccountID: emulatorAccount})
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
