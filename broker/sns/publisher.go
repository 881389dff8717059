package sns

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/awsconf"
	"github.com/heraldhq/herald/broker/internal/awsmsg"
)

// HeaderPrefix is the CloudEvents attribute prefix of SNS messages.
const HeaderPrefix = awsmsg.HeaderPrefix

// ErrClosed fails messages published after Close.
var ErrClosed = errors.New("sns: publisher is closed")

// DedupeInterval is SNS's deduplication interval on FIFO topics.
const DedupeInterval = 5 * time.Minute

// FIFOGuarantees is what a FIFO topic promises: each partition key's
// messages in order, an event id seen within 5 minutes dropped.
var FIFOGuarantees = broker.Guarantees{KeyOrder: true, Dedupe: true, DedupeWindow: DedupeInterval}

// Publisher publishes to SNS topics with PublishBatch. The SDK's own
// retries are off: the relay's retry policy and breaker decide.
type Publisher struct {
	cfg    Config
	aws    awsconf.Conn
	client *awssns.Client
	closed atomic.Bool
}

var (
	_ broker.Publisher = (*Publisher)(nil)
	_ broker.Limiter   = (*Publisher)(nil)
	_ broker.Pinger    = (*Publisher)(nil)
)

// New returns a publisher for cfg. It resolves the region and credentials
// (a *broker.ConfigError naming the key when there are none) and does not
// call SNS.
func New(ctx context.Context, cfg Config) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sns: %w", err)
	}
	awsCfg, err := cfg.Settings.Load(ctx, 1)
	if err != nil {
		return nil, err
	}
	return &Publisher{cfg: cfg, aws: awsCfg, client: awssns.NewFromConfig(awsCfg.Config)}, nil
}

// Guarantees is the declaration for standard topics: no order, no dedupe
// (FIFOGuarantees for FIFO topics).
func (p *Publisher) Guarantees() broker.Guarantees { return broker.Guarantees{} }

// MaxPayload implements broker.Limiter.
func (p *Publisher) MaxPayload() int { return p.cfg.MaxPayload }

// Ping implements broker.Pinger: one ListTopics call. An answer refusing
// it (no permission to list) still proves SNS is reachable.
func (p *Publisher) Ping(ctx context.Context) error {
	_, err := p.client.ListTopics(ctx, &awssns.ListTopicsInput{})
	return awsconf.PingResult("sns", err)
}

// Close implements broker.Publisher.
func (p *Publisher) Close() error {
	p.closed.Store(true)
	p.aws.Close()
	return nil
}

// TopicARN returns a destination's topic ARN: the destination when it is
// one, else the ARN of the topic of that name in the entry's region and
// account (account_id), or an error when the account is not known.
func (p *Publisher) TopicARN(dest string) (string, error) {
	if strings.HasPrefix(dest, "arn:") {
		return dest, nil
	}
	if p.cfg.AccountID == "" {
		return "", fmt.Errorf("sns: destination %q is a topic name: set the broker's account_id, or write the topic ARN", dest)
	}
	return "arn:" + partition(p.aws.Region) + ":sns:" + p.aws.Region + ":" + p.cfg.AccountID + ":" + dest, nil
}

// partition is the AWS partition of a region.
func partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
}

// topicName is the last part of a topic ARN.
func topicName(arn string) string { return arn[strings.LastIndex(arn, ":")+1:] }

// Publish implements broker.Publisher.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	if p.closed.Load() {
		return awsconf.AllFailed(len(msgs), ErrClosed)
	}
	results := make([]broker.Result, len(msgs))
	out := make([]awsmsg.Outgoing, len(msgs))
	arns := make([]string, len(msgs))
	sizes := make([]int, len(msgs))
	for i, m := range msgs {
		arn, err := p.TopicARN(m.Destination)
		if err != nil {
			results[i].Err = herald.Permanent(err)
			continue
		}
		arns[i] = arn
		out[i], results[i].Err = awsmsg.Prepare(m, p.cfg.Source, awsmsg.Limits{Service: "sns", MaxPayload: p.cfg.MaxPayload,
			MaxSize: MaxMessageSize, SizeName: "SNS's message size", FIFO: strings.HasSuffix(arn, ".fifo"),
			DefaultGroup: p.cfg.MessageGroupID})
		sizes[i] = out[i].Size()
	}
	awsmsg.Send(ctx, msgs, sizes, results, awsmsg.Batching{Entries: 10, Bytes: MaxMessageSize, Parallel: p.cfg.Parallel},
		func(ctx context.Context, _ string, idx []int) []broker.Result {
			return p.publishBatch(ctx, msgs, arns[idx[0]], out, idx)
		})
	return results
}

// publishBatch publishes msgs[idx...] (one topic) in one PublishBatch
// call and maps each entry's result to its message.
func (p *Publisher) publishBatch(ctx context.Context, msgs []broker.Message, arn string, out []awsmsg.Outgoing, idx []int) []broker.Result {
	entries := make([]types.PublishBatchRequestEntry, len(idx))
	ids := make([]string, len(idx))
	for j, i := range idx {
		o := out[i]
		e := types.PublishBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), Message: aws.String(o.Body),
			MessageAttributes: attributes(o.Attributes)}
		if o.Group != "" {
			e.MessageGroupId, e.MessageDeduplicationId = aws.String(o.Group), aws.String(o.Dedup)
		}
		entries[j], ids[j] = e, msgs[i].Event.ID
	}
	resp, err := p.client.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(arn), PublishBatchRequestEntries: entries})
	var answers []awsmsg.Answer
	if err == nil {
		for _, s := range resp.Successful {
			answers = append(answers, awsmsg.Answer{ID: aws.ToString(s.Id), MessageID: aws.ToString(s.MessageId)})
		}
		for _, f := range resp.Failed {
			answers = append(answers, awsmsg.Answer{ID: aws.ToString(f.Id), Code: aws.ToString(f.Code), Text: aws.ToString(f.Message)})
		}
	}
	return awsmsg.Results("sns", topicName(arn), ids, err, answers)
}

// attributes converts awsmsg attributes to SNS's.
func attributes(attrs map[string]string) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for k, v := range attrs {
		out[k] = types.MessageAttributeValue{DataType: aws.String(awsmsg.DataType), StringValue: aws.String(v)}
	}
	return out
}
