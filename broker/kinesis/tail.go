package kinesis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awskinesis "github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker/awsconf"
	"github.com/heraldhq/herald/internal/sleep"
)

// tailPoll is the pause of a tail between GetRecords calls that found
// nothing (Kinesis allows 5 a second a shard).
const tailPoll = 500 * time.Millisecond

// Tail calls fn with each record the stream receives from now on (every
// open shard from its tip), decoded, until ctx ends; it returns nil then.
// It keeps no checkpoint and changes nothing for the stream's consumers.
// ready is called once every shard is watched.
func Tail(ctx context.Context, settings awsconf.Settings, stream string, ready func(), fn func(herald.Event)) error {
	conn, err := settings.Load(ctx, 3)
	if err != nil {
		return err
	}
	defer conn.Close()
	c := awskinesis.NewFromConfig(conn.Config)
	in := &awskinesis.ListShardsInput{ShardFilter: &types.ShardFilter{Type: types.ShardFilterTypeAtLatest}}
	in.StreamName, in.StreamARN = streamInput(stream)
	shards, err := c.ListShards(ctx, in)
	if err != nil {
		return fmt.Errorf("kinesis: tail %s: %w", stream, err)
	}
	iters := make([]*string, 0, len(shards.Shards))
	for _, sh := range shards.Shards {
		if sh.SequenceNumberRange != nil && sh.SequenceNumberRange.EndingSequenceNumber != nil {
			continue // closed by a reshard
		}
		it := &awskinesis.GetShardIteratorInput{ShardId: sh.ShardId, ShardIteratorType: types.ShardIteratorTypeLatest}
		it.StreamName, it.StreamARN = streamInput(stream)
		out, err := c.GetShardIterator(ctx, it)
		if err != nil {
			return fmt.Errorf("kinesis: tail %s: %w", stream, err)
		}
		iters = append(iters, out.ShardIterator)
	}
	ready()
	var mu sync.Mutex // fn is called from one goroutine at a time
	var wg sync.WaitGroup
	for _, iter := range iters {
		wg.Go(func() {
			tailShard(ctx, c, iter, func(ev herald.Event) {
				mu.Lock()
				defer mu.Unlock()
				fn(ev)
			})
		})
	}
	wg.Wait()
	return nil
}

// tailShard reads one shard from iter until ctx ends or the shard closes.
func tailShard(ctx context.Context, c *awskinesis.Client, iter *string, fn func(herald.Event)) {
	for iter != nil && ctx.Err() == nil {
		out, err := c.GetRecords(ctx, &awskinesis.GetRecordsInput{ShardIterator: iter})
		if err != nil {
			var expired *types.ExpiredIteratorException
			if errors.As(err, &expired) || ctx.Err() != nil {
				return
			}
			sleep.For(ctx, tailPoll)
			continue
		}
		for _, r := range out.Records {
			ev, err := Decode(r.Data)
			if err != nil {
				ev = herald.Event{ID: aws.ToString(r.SequenceNumber), PartitionKey: aws.ToString(r.PartitionKey), Payload: r.Data}
			}
			fn(ev)
		}
		iter = out.NextShardIterator
		if len(out.Records) == 0 {
			sleep.For(ctx, tailPoll)
		}
	}
}
