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
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/internal/sleep"
)

// shardReader reads one leased shard from its checkpoint and hands its
// records out in order. It tracks which were acked: the checkpoint is the
// last record of the longest acked prefix (the projector applies one
// shard's records on several workers, so a later record may commit before
// an earlier one; the prefix never passes a record not applied).
type shardReader struct {
	sub   *Subscriber
	shard string
	stop  chan struct{}
	done  chan struct{}

	mu       sync.Mutex
	pending  []string        // sequence numbers handed out, in order
	acked    map[string]bool // of those, acked
	applied  string          // the checkpoint: last of the acked prefix
	written  string          // the checkpoint last written
	ended    bool            // the shard is closed and read to its end
	lost     bool            // the lease is gone: acks no longer count
	lastRead string          // the last sequence number handed out
}

func newShardReader(s *Subscriber, shard, checkpoint string) *shardReader {
	return &shardReader{sub: s, shard: shard, stop: make(chan struct{}), done: make(chan struct{}),
		acked: map[string]bool{}, applied: checkpoint, written: checkpoint, lastRead: checkpoint}
}

// ack settles one record and moves the checkpoint over the acked prefix.
func (r *shardReader) ack(seq string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lost {
		return
	}
	r.acked[seq] = true
	for len(r.pending) > 0 && r.acked[r.pending[0]] {
		delete(r.acked, r.pending[0])
		r.applied = r.pending[0]
		r.pending = r.pending[1:]
	}
}

// state returns the checkpoint to write ("" when unchanged) and whether
// the shard is finished: closed, read to its end, every record acked.
func (r *shardReader) state() (checkpoint string, finished bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.applied != r.written {
		checkpoint = r.applied
	}
	return checkpoint, r.ended && len(r.pending) == 0
}

// wrote records that checkpoint is in the database.
func (r *shardReader) wrote(checkpoint string) {
	r.mu.Lock()
	r.written = checkpoint
	r.mu.Unlock()
}

// halt stops the reader and waits for it; lost says the lease is gone.
func (r *shardReader) halt(lost bool) {
	r.mu.Lock()
	r.lost = r.lost || lost
	r.mu.Unlock()
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}

// run reads until the shard ends or the reader is stopped.
func (r *shardReader) run() {
	defer close(r.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	pause := r.sub.cfg.PollInterval
	var iter *string
	for ctx.Err() == nil {
		if iter == nil {
			var err error
			if iter, err = r.iterator(ctx); err != nil {
				r.sub.warn(ctx, "kinesis: shard iterator", r.shard, err)
				sleep.For(ctx, r.sub.cfg.PollInterval)
				continue
			}
		}
		out, err := r.sub.client.GetRecords(ctx, &awskinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1000)})
		var expired *types.ExpiredIteratorException
		switch {
		case errors.As(err, &expired):
			iter = nil // a new one after the last record handed out
			continue
		case err != nil:
			r.sub.warn(ctx, "kinesis: get records", r.shard, err)
			sleep.For(ctx, min(pause*2, 5*time.Second))
			continue
		}
		if !r.handOut(ctx, out.Records) {
			return
		}
		if out.NextShardIterator == nil {
			r.mu.Lock()
			r.ended = true
			r.mu.Unlock()
			return
		}
		iter = out.NextShardIterator
		if len(out.Records) == 0 {
			// Kinesis allows 5 GetRecords a second a shard.
			sleep.For(ctx, pause)
		}
	}
}

// iterator starts after the last record handed out (the checkpoint at
// first), or at the shard's oldest record.
func (r *shardReader) iterator(ctx context.Context) (*string, error) {
	in := &awskinesis.GetShardIteratorInput{ShardId: aws.String(r.shard), ShardIteratorType: types.ShardIteratorTypeTrimHorizon}
	in.StreamName, in.StreamARN = streamInput(r.sub.cfg.Stream)
	r.mu.Lock()
	if r.lastRead != "" {
		in.ShardIteratorType, in.StartingSequenceNumber = types.ShardIteratorTypeAfterSequenceNumber, aws.String(r.lastRead)
	}
	r.mu.Unlock()
	out, err := r.sub.client.GetShardIterator(ctx, in)
	if err != nil {
		return nil, err
	}
	return out.ShardIterator, nil
}

// handOut decodes records and sends them to Receive, in order; false when
// the reader was stopped first.
func (r *shardReader) handOut(ctx context.Context, recs []types.Record) bool {
	for _, rec := range recs {
		seq := aws.ToString(rec.SequenceNumber)
		ev := r.event(rec)
		r.mu.Lock()
		r.pending = append(r.pending, seq)
		r.lastRead = seq
		r.mu.Unlock()
		m := broker.Received{Event: ev,
			Ack: func(context.Context) error { r.ack(seq); return nil },
			// A record cannot be handed back alone; one not acked holds
			// the checkpoint, and is read again after a restart.
			Nack: func(context.Context) error { return nil }}
		select {
		case r.sub.out <- m:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// event decodes a record; data that is not a CloudEvent (another
// producer's) becomes an event with the record's position as its id, the
// data as its payload and the record's partition key.
func (r *shardReader) event(rec types.Record) herald.Event {
	ev, err := Decode(rec.Data)
	if err != nil {
		ev = herald.Event{Payload: rec.Data}
	}
	if ev.ID == "" {
		ev.ID = fmt.Sprintf("kinesis:%s:%s:%s", r.sub.cfg.Stream, r.shard, aws.ToString(rec.SequenceNumber))
	}
	if ev.PartitionKey == "" {
		ev.PartitionKey = aws.ToString(rec.PartitionKey)
	}
	if ev.CreatedAt.IsZero() && rec.ApproximateArrivalTimestamp != nil {
		ev.CreatedAt = *rec.ApproximateArrivalTimestamp
	}
	return ev
}
