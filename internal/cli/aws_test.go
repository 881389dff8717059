package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awskinesis "github.com/aws/aws-sdk-go-v2/service/kinesis"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/heraldhq/herald/internal/testenv"
)

// awsEntry is a broker entry of type kind on a test endpoint.
func awsEntry(kind, endpoint string) string {
	return fmt.Sprintf("{type: %s, endpoint: %q, region: %s, access_key_id: %s, secret_access_key: %s}",
		kind, endpoint, testenv.AWSRegion, testenv.AWSAccessKey, testenv.AWSSecretKey)
}

// awsDown is an AWS emulator behind a fault proxy that is stopped when
// `herald run` starts; up starts the proxy.
func awsDown(t *testing.T, emu testenv.Emulator) (endpoint, proxy string, up func(t *testing.T)) {
	srv := emu.Start(t)
	px := testenv.StartFaultProxy(t, srv.URL)
	px.Stop(t)
	return srv.URL, px.URL(), func(t *testing.T) { px.Start(t) }
}

func creds() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(testenv.AWSAccessKey, testenv.AWSSecretKey, "")
}

// Rule: `herald run` started while SQS, SNS or Kinesis is unreachable runs
// on, not ready, spends no attempt, and delivers once it answers (as
// TestRunStartsWithBrokerDown for the other types).
func TestRunStartsWithAWSBrokerDown(t *testing.T) {
	cases := map[string]func(t *testing.T) downBroker{"sqs": downSQS, "sns": downSNS, "kinesis": downKinesis}
	for _, name := range []string{"sqs", "sns", "kinesis"} {
		t.Run(name, func(t *testing.T) { runWithBrokerDown(t, cases[name](t)) })
	}
}

func downSQS(t *testing.T) downBroker {
	endpoint, proxy, up := awsDown(t, testenv.Fauxqs)
	c := awssqs.New(awssqs.Options{Region: testenv.AWSRegion, Credentials: creds(), BaseEndpoint: aws.String(endpoint)})
	q := testenv.Name("herald-down")
	if _, err := c.CreateQueue(context.Background(), &awssqs.CreateQueueInput{QueueName: aws.String(q)}); err != nil {
		t.Fatal(err)
	}
	return downBroker{yaml: awsEntry("sqs", proxy), up: up, refused: true}.withDestination(q)
}

func downSNS(t *testing.T) downBroker {
	endpoint, proxy, up := awsDown(t, testenv.Fauxqs)
	c := awssns.New(awssns.Options{Region: testenv.AWSRegion, Credentials: creds(), BaseEndpoint: aws.String(endpoint)})
	topic, err := c.CreateTopic(context.Background(), &awssns.CreateTopicInput{Name: aws.String(testenv.Name("herald-down"))})
	if err != nil {
		t.Fatal(err)
	}
	return downBroker{yaml: awsEntry("sns", proxy), up: up, refused: true}.withDestination(aws.ToString(topic.TopicArn))
}

func downKinesis(t *testing.T) downBroker {
	endpoint, proxy, up := awsDown(t, testenv.Kinesalite)
	c := awskinesis.New(awskinesis.Options{Region: testenv.AWSRegion, Credentials: creds(), BaseEndpoint: aws.String(endpoint)})
	stream := testenv.Name("herald-down")
	if _, err := c.CreateStream(context.Background(), &awskinesis.CreateStreamInput{StreamName: aws.String(stream),
		ShardCount: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	return downBroker{yaml: awsEntry("kinesis", proxy), up: up, refused: true}.withDestination(stream)
}

// Rule: an AWS broker entry for which no credentials can be found (none in
// the file, the environment or the shared files) makes `herald run` exit
// 2 at start, naming the entry's key; no region, naming region.
func TestRunAWSCredentialsMissing(t *testing.T) {
	testenv.NoAWSCredentials(t)
	for _, kind := range []string{"sqs", "sns", "kinesis"} {
		t.Run(kind, func(t *testing.T) {
			for entry, key := range map[string]string{
				fmt.Sprintf("{type: %s, region: eu-west-1, endpoint: \"http://127.0.0.1:1\"}", kind): "brokers.aws.access_key_id",
				fmt.Sprintf("{type: %s, access_key_id: a, secret_access_key: b}", kind):              "brokers.aws.region",
			} {
				dir := t.TempDir()
				cfg := filepath.Join(dir, "herald.yaml")
				_ = os.WriteFile(cfg, []byte(fmt.Sprintf(`
store: {driver: sqlite, dsn: %s}
brokers:
  aws: %s
lanes:
  - {name: main, table: main_outbox, broker: aws, destination: "arn:aws:sns:eu-west-1:000000000000:t"}
`, filepath.Join(dir, "h.db"), entry)), 0o600)
				code, _, errOut := cliRun(t, "run", "--config", cfg)
				if code != ExitUsage || !strings.Contains(errOut, key) {
					t.Errorf("%s: exit %d, want %d naming %s:\n%s", entry, code, ExitUsage, key, errOut)
				}
			}
		})
	}
}
