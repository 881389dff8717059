package sqs

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heraldhq/herald/broker/awsconf"
)

// queue is what the publisher knows of one destination.
type queue struct {
	url  string
	fifo bool
	// maxSize is the queue's MaximumMessageSize (DefaultMaxMessageSize
	// when the queue could not be asked).
	maxSize int
}

// queues resolves destinations (names or URLs) to queues, once each.
type queues struct {
	client *awssqs.Client
	mu     sync.Mutex
	known  map[string]queue
}

// resolve returns dest's queue: a URL as it is, a name through
// GetQueueUrl; and its MaximumMessageSize. Errors are not kept: the next
// batch asks again (a queue created meanwhile is found).
func (q *queues) resolve(ctx context.Context, dest string) (queue, error) {
	q.mu.Lock()
	got, ok := q.known[dest]
	q.mu.Unlock()
	if ok {
		return got, nil
	}
	got = queue{url: dest, fifo: strings.HasSuffix(queueName(dest), ".fifo"), maxSize: DefaultMaxMessageSize}
	if !isURL(dest) {
		out, err := q.client.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(dest)})
		if err != nil {
			return queue{}, fmt.Errorf("sqs: queue %q: %w", dest, awsconf.Request(err))
		}
		got.url = aws.ToString(out.QueueUrl)
	}
	attrs, err := q.client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(got.url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameMaximumMessageSize}})
	if err != nil && !awsconf.Reachable(err) {
		return queue{}, fmt.Errorf("sqs: queue %q: %w", dest, awsconf.Request(err))
	}
	// Without the permission to read it the default size holds.
	if err == nil {
		if n, perr := strconv.Atoi(attrs.Attributes[string(types.QueueAttributeNameMaximumMessageSize)]); perr == nil && n > 0 {
			got.maxSize = n
		}
	}
	q.mu.Lock()
	q.known[dest] = got
	q.mu.Unlock()
	return got, nil
}

// isURL reports whether a destination is a queue URL rather than a name.
func isURL(dest string) bool {
	return strings.HasPrefix(dest, "https://") || strings.HasPrefix(dest, "http://")
}

// queueName is a destination's queue name: the last segment of a URL.
func queueName(dest string) string {
	if !isURL(dest) {
		return dest
	}
	u, err := url.Parse(dest)
	if err != nil {
		return dest
	}
	return u.Path[strings.LastIndex(u.Path, "/")+1:]
}
