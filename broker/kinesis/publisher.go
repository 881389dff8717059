package kinesis

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awskinesis "github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/awsconf"
	"github.com/heraldhq/herald/broker/internal/awsmsg"
)

// HeaderPrefix is the prefix Attributes gives the CloudEvents attributes.
const HeaderPrefix = awsmsg.HeaderPrefix

// ErrClosed fails records published after Close.
var ErrClosed = errors.New("kinesis: publisher is closed")

// Publisher publishes to Kinesis data streams with PutRecords. Records of
// one partition key go to one shard, in order; a record that fails is
// retried by the relay alone, and the later records of its key in the
// batch are held back. The SDK's own retries are off: the relay's retry
// policy and breaker decide.
type Publisher struct {
	cfg    Config
	aws    awsconf.Conn
	client *awskinesis.Client
	closed atomic.Bool
}

var (
	_ broker.Publisher = (*Publisher)(nil)
	_ broker.Limiter   = (*Publisher)(nil)
	_ broker.Pinger    = (*Publisher)(nil)
)

// New returns a publisher for cfg. It resolves the region and credentials
// (a *broker.ConfigError naming the key when there are none) and does not
// call Kinesis.
func New(ctx context.Context, cfg Config) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kinesis: %w", err)
	}
	awsCfg, err := cfg.Settings.Load(ctx, 1)
	if err != nil {
		return nil, err
	}
	return &Publisher{cfg: cfg, aws: awsCfg, client: awskinesis.NewFromConfig(awsCfg.Config)}, nil
}

// Guarantees: one partition key's records are stored in order (one shard,
// sequence numbers in publish order); Kinesis has no dedupe.
func (p *Publisher) Guarantees() broker.Guarantees { return broker.Guarantees{KeyOrder: true} }

// MaxPayload implements broker.Limiter.
func (p *Publisher) MaxPayload() int { return p.cfg.MaxPayload }

// Ping implements broker.Pinger: one ListStreams call.
func (p *Publisher) Ping(ctx context.Context) error {
	_, err := p.client.ListStreams(ctx, &awskinesis.ListStreamsInput{Limit: aws.Int32(1)})
	return awsconf.PingResult("kinesis", err)
}

// Close implements broker.Publisher.
func (p *Publisher) Close() error {
	p.closed.Store(true)
	p.aws.Close()
	return nil
}

// PartitionKey is the record partition key of an event: its partition key
// when Kinesis takes it (1 to 256 characters), an MD5 of it when longer
// (the same shard for the same key), the event id when it has none.
func PartitionKey(ev herald.Event) string {
	k := ev.PartitionKey
	switch {
	case k == "":
		return ev.ID
	case utf8.RuneCountInString(k) > 256:
		sum := md5.Sum([]byte(k))
		return "md5-" + hex.EncodeToString(sum[:])
	}
	return k
}

// Publish implements broker.Publisher.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	if p.closed.Load() {
		return awsconf.AllFailed(len(msgs), ErrClosed)
	}
	results := make([]broker.Result, len(msgs))
	entries := make([]types.PutRecordsRequestEntry, len(msgs))
	sizes := make([]int, len(msgs))
	for i, m := range msgs {
		entries[i] = types.PutRecordsRequestEntry{Data: Encode(m, p.cfg.Source), PartitionKey: aws.String(PartitionKey(m.Event))}
		sizes[i] = len(entries[i].Data) + len(*entries[i].PartitionKey)
		results[i].Err = p.check(m, sizes[i])
	}
	awsmsg.Send(ctx, msgs, sizes, results, awsmsg.Batching{Entries: MaxRequestRecords, Bytes: MaxRequestSize, Parallel: p.cfg.Parallel},
		func(ctx context.Context, stream string, idx []int) []broker.Result {
			return p.putRecords(ctx, msgs, stream, entries, idx)
		})
	return results
}

// check refuses a record over the limits, permanently.
func (p *Publisher) check(m broker.Message, size int) error {
	id, payload := m.Event.ID, len(m.Event.Payload)
	switch {
	case payload > p.cfg.MaxPayload:
		return herald.Permanent(awsmsg.TooLarge("kinesis", id, payload, payload, p.cfg.MaxPayload, "max_payload"))
	case size > MaxRecordSize:
		return herald.Permanent(awsmsg.TooLarge("kinesis", id, payload, size, MaxRecordSize, "Kinesis's record size"))
	}
	return nil
}

// streamInput names a stream by ARN or by name.
func streamInput(stream string) (name, arn *string) {
	if strings.HasPrefix(stream, "arn:") {
		return nil, aws.String(stream)
	}
	return aws.String(stream), nil
}

// putRecords sends msgs[idx...] (one stream) in one PutRecords call and
// maps each record's result: its shard and sequence number, or its error.
func (p *Publisher) putRecords(ctx context.Context, msgs []broker.Message, stream string, entries []types.PutRecordsRequestEntry,
	idx []int) []broker.Result {
	in := &awskinesis.PutRecordsInput{Records: make([]types.PutRecordsRequestEntry, len(idx))}
	in.StreamName, in.StreamARN = streamInput(stream)
	for j, i := range idx {
		in.Records[j] = entries[i]
	}
	res := make([]broker.Result, len(idx))
	resp, err := p.client.PutRecords(ctx, in)
	if err == nil && len(resp.Records) != len(idx) {
		err = herald.Ambiguous(fmt.Errorf("%d results for %d records", len(resp.Records), len(idx)))
	}
	if err != nil {
		err = fmt.Errorf("kinesis: put to %s: %w", stream, awsconf.Request(err))
		for j := range res {
			res[j].Err = err
		}
		return res
	}
	for j, r := range resp.Records {
		if code := aws.ToString(r.ErrorCode); code != "" {
			e := fmt.Errorf("kinesis: event %s refused by %s: %s: %s", msgs[idx[j]].Event.ID, stream, code, aws.ToString(r.ErrorMessage))
			if code == "InternalFailure" {
				res[j].Err = herald.Ambiguous(e)
			} else {
				res[j].Err = awsconf.Wrap(awsconf.CodeKind(code, aws.ToString(r.ErrorMessage)), e)
			}
			continue
		}
		res[j].Receipt = herald.Receipt{Stream: stream, Shard: aws.ToString(r.ShardId), MessageID: aws.ToString(r.SequenceNumber)}
	}
	return res
}
