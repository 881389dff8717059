package kafka

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// errorLogEvery is how often one partition's same fetch error is logged
// again while it lasts: the client reports it on every poll.
const errorLogEvery = 30 * time.Second

// errorLog logs the fetch errors that a poll returns beside records. Those
// polls are Receive's success, so without it a partition that keeps
// failing while the others deliver (its records waiting) would never be
// seen in the projector's log.
type errorLog struct {
	logger *slog.Logger

	mu     sync.Mutex
	logged map[string]time.Time // topic/partition/error → when logged
}

func newErrorLog(l *slog.Logger) *errorLog {
	if l == nil {
		l = slog.Default()
	}
	return &errorLog{logger: l, logged: map[string]time.Time{}}
}

// log logs each error at now, unless the same partition's same error was
// logged within errorLogEvery.
func (e *errorLog) log(errs []kgo.FetchError, now time.Time) {
	for _, fe := range errs {
		key := fmt.Sprintf("%s/%d/%s", fe.Topic, fe.Partition, fe.Err)
		e.mu.Lock()
		last, seen := e.logged[key]
		fresh := !seen || now.Sub(last) >= errorLogEvery
		if fresh {
			e.logged[key] = now
		}
		e.mu.Unlock()
		if fresh {
			e.logger.Warn("kafka: fetching a partition failed while others delivered; its records wait",
				slog.String("topic", fe.Topic), slog.Int("partition", int(fe.Partition)), slog.String("error", fe.Err.Error()))
		}
	}
}
