package kinesis_test

import (
	"context"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker/brokertest"
	"github.com/heraldhq/herald/broker/internal/awstest"
	"github.com/heraldhq/herald/broker/kinesis"
	"github.com/heraldhq/herald/internal/testenv"
)

// TestTail: herald tail on a stream of two shards shows what arrives
// after it starts, decoded, and nothing from before.
func TestTail(t *testing.T) {
	srv := testenv.Kinesalite.Start(t)
	stream := awstest.CreateStream(t, awstest.KinesisClient(t, srv.URL), "tail", 2)
	p, err := kinesis.New(context.Background(), kinesis.Config{Settings: awstest.Settings(srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	brokertest.RunTail(t, p, stream, func(ctx context.Context, ready func(), fn func(herald.Event)) error {
		return kinesis.Tail(ctx, awstest.Settings(srv.URL), stream, ready, fn)
	})
}
