package awstest

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awskinesis "github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/internal/testenv"
)

// KinesisClient is a plain Kinesis client on endpoint.
func KinesisClient(t testing.TB, endpoint string) *awskinesis.Client {
	return awskinesis.New(awskinesis.Options{Region: testenv.AWSRegion, BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider(testenv.AWSAccessKey, testenv.AWSSecretKey, ""),
		HTTPClient:  httpClient(t)})
}

// CreateStream creates a stream named after name with shards shards,
// waits until it is active and returns its name.
func CreateStream(t testing.TB, c *awskinesis.Client, name string, shards int) string {
	t.Helper()
	stream := testenv.Name("herald-" + name)
	ctx := context.Background()
	if _, err := c.CreateStream(ctx, &awskinesis.CreateStreamInput{StreamName: aws.String(stream),
		ShardCount: aws.Int32(int32(shards))}); err != nil {
		t.Fatalf("create stream %s: %v", stream, err)
	}
	WaitActive(t, c, stream)
	return stream
}

// WaitActive waits until stream is active (created, resharded).
func WaitActive(t testing.TB, c *awskinesis.Client, stream string) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, 20*time.Millisecond, "stream "+stream+" active", func() bool {
		out, err := c.DescribeStreamSummary(context.Background(), &awskinesis.DescribeStreamSummaryInput{StreamName: aws.String(stream)})
		return err == nil && out.StreamDescriptionSummary.StreamStatus == types.StreamStatusActive
	})
}

// StreamRecords returns every record of stream, shard after shard (each
// in its order), waiting until want records are there or 5s passed.
func StreamRecords(t testing.TB, c *awskinesis.Client, stream string, want int) []types.Record {
	t.Helper()
	var out []types.Record
	deadline := time.Now().Add(5 * time.Second)
	for {
		out = readAll(t, c, stream)
		if len(out) >= want || time.Now().After(deadline) {
			return out
		}
		time.Sleep(20 * time.Millisecond) // a polling pace, with a deadline
	}
}

// readAll reads every shard of stream from its start to its tip.
func readAll(t testing.TB, c *awskinesis.Client, stream string) []types.Record {
	t.Helper()
	ctx := context.Background()
	shards, err := c.ListShards(ctx, &awskinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil {
		t.Fatalf("list shards of %s: %v", stream, err)
	}
	var out []types.Record
	for _, sh := range shards.Shards {
		it, err := c.GetShardIterator(ctx, &awskinesis.GetShardIteratorInput{StreamName: aws.String(stream), ShardId: sh.ShardId,
			ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatalf("iterator of %s: %v", aws.ToString(sh.ShardId), err)
		}
		for iter := it.ShardIterator; iter != nil; {
			got, err := c.GetRecords(ctx, &awskinesis.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatalf("records of %s: %v", aws.ToString(sh.ShardId), err)
			}
			out = append(out, got.Records...)
			if len(got.Records) == 0 {
				break // the shard's tip
			}
			iter = got.NextShardIterator
		}
	}
	return out
}

// ReadStream is StreamRecords decoded for the suite with decode.
func ReadStream(t *testing.T, c *awskinesis.Client, stream string, want int,
	decode func(t *testing.T, r types.Record) brokertest.Received) []brokertest.Received {
	t.Helper()
	recs := StreamRecords(t, c, stream, want)
	out := make([]brokertest.Received, len(recs))
	for i, r := range recs {
		out[i] = decode(t, r)
		out[i].Destination = stream
	}
	return out
}
