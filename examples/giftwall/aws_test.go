package giftwall_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awskinesis "github.com/aws/aws-sdk-go-v2/service/kinesis"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/examples/giftwall"
	"github.com/heraldhq/herald/internal/testenv"
)

// demoQueues are the example files' queue and stream names.
var demoQueues = []string{"giftwall-wallet", "giftwall-room", "giftwall-robot"}

// TestDemoOnSQS runs the demo from examples/giftwall/sqs.yaml against
// fauxqs: 300 gifts relayed to SQS queues and projected from the wallet
// queue with the SQS subscriber; the wall matches the ledger.
func TestDemoOnSQS(t *testing.T) {
	srv := testenv.Fauxqs.Start(t)
	c := awssqs.New(awssqs.Options{Region: testenv.AWSRegion, BaseEndpoint: aws.String(srv.URL), Credentials: testCreds()})
	for _, q := range demoQueues {
		if _, err := c.CreateQueue(context.Background(), &awssqs.CreateQueueInput{QueueName: aws.String(q)}); err != nil {
			t.Fatal(err)
		}
	}
	runExampleDemo(t, "sqs.yaml", srv.URL)
}

// TestDemoOnKinesis runs the demo from examples/giftwall/kinesis.yaml
// against kinesalite: the wall is projected from the wallet stream with the
// Kinesis subscriber, its checkpoints in the demo's SQLite file.
func TestDemoOnKinesis(t *testing.T) {
	srv := testenv.Kinesalite.Start(t)
	c := awskinesis.New(awskinesis.Options{Region: testenv.AWSRegion, BaseEndpoint: aws.String(srv.URL), Credentials: testCreds()})
	for _, s := range demoQueues {
		if _, err := c.CreateStream(context.Background(), &awskinesis.CreateStreamInput{StreamName: aws.String(s),
			ShardCount: aws.Int32(2)}); err != nil {
			t.Fatal(err)
		}
	}
	runExampleDemo(t, "kinesis.yaml", srv.URL)
}

func testCreds() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(testenv.AWSAccessKey, testenv.AWSSecretKey, "")
}

// runExampleDemo runs the demo on an example file with its endpoint and
// database moved to the test's, for 300 gifts, and verifies the wall.
func runExampleDemo(t *testing.T, file, endpoint string) {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.Replace(string(text), "http://127.0.0.1:4566", endpoint, 1)
	yaml = strings.Replace(yaml, "dsn: giftwall-", "dsn: "+filepath.Join(t.TempDir(), "giftwall-"), 1)
	f, err := config.Parse([]byte(yaml), file, drv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := giftwall.StartDemo(ctx, giftwall.DemoOptions{File: f, Logger: quiet(), LaunchDelay: 200 * time.Millisecond,
		Traffic: giftwall.TrafficConfig{Gifts: 300}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	select {
	case <-d.GenerationDone():
	case <-time.After(2 * time.Minute):
		t.Fatal("the traffic did not end within 2 minutes")
	}
	if err := d.GenerationErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Settle(ctx, time.Minute, func(giftwall.Snapshot) {}); err != nil {
		t.Fatal(err)
	}
	rep, err := d.Verify(ctx)
	if err != nil || !rep.OK() || rep.Gifts != 300 {
		t.Fatalf("[wall = ledger] %v, %v", rep, err)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
}
