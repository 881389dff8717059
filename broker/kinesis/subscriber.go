package kinesis

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awskinesis "github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/awsconf"
)

// SubscriberConfig configures a Subscriber on one stream.
type SubscriberConfig struct {
	// Settings: region, endpoint, profile and credentials, as Config's.
	awsconf.Settings
	// Stream is the stream's name or ARN. Required.
	Stream string
	// Group names the consumers that share the stream's shards and
	// checkpoints: every process of one projection uses the same. Required.
	Group string
	// DB and Dialect are the projection's database, where the shards'
	// leases and checkpoints are kept (Table). Required.
	DB      *sql.DB
	Dialect herald.Dialect
	// Table is the table of leases and checkpoints, created if missing.
	// Defaults to DefaultShardTable.
	Table string
	// LeaseTimeout is how long a shard's holder may fail to renew its
	// lease before another process takes the shard. Renewals (with the
	// checkpoints) come every third of it. Defaults to 30s.
	LeaseTimeout time.Duration
	// PollInterval is the pause after a GetRecords call that found nothing
	// new (Kinesis allows 5 calls a second a shard). Defaults to 1s.
	PollInterval time.Duration
	// Logger receives what the readers hit (throttling, a lost lease).
	// Defaults to slog.Default().
	Logger *slog.Logger
}

// Subscriber is a broker.Subscriber on a Kinesis stream. Every process of
// a group leases a fair share of the stream's open shards in the group's
// table, reads each from its checkpoint (or its oldest record), and hands
// the records out in shard order. An ack moves the shard's checkpoint
// over the longest prefix of acked records; checkpoints are written with
// the lease renewals and when the subscriber closes. A process that stops
// renewing (killed) loses its shards after LeaseTimeout to the others,
// which start from its last checkpoint: the records after it that were
// applied already are answered "done" by the projection table, so each
// event is applied once. After a reshard, a child shard is taken only when
// its parents are read to their end and applied (checkpoint ShardEnd), so
// one partition key's events stay in order.
type Subscriber struct {
	cfg    SubscriberConfig
	conn   awsconf.Conn
	client *awskinesis.Client
	leases *leaseStore
	me     string
	log    *slog.Logger
	out    chan broker.Received

	mu      sync.Mutex
	readers map[string]*shardReader
	seen    map[string]sighting

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// sighting is a lease as this process last saw it change.
type sighting struct {
	owner   string
	counter int64
	at      time.Time
}

var _ broker.Subscriber = (*Subscriber)(nil)

// NewSubscriber creates the table if need be and starts leasing shards.
func NewSubscriber(ctx context.Context, cfg SubscriberConfig) (*Subscriber, error) {
	switch {
	case cfg.Stream == "" || cfg.Group == "":
		return nil, errors.New("kinesis: subscriber: Stream and Group are required")
	case cfg.DB == nil:
		return nil, errors.New("kinesis: subscriber: DB (the projection's database) is required")
	}
	if cfg.Table == "" {
		cfg.Table = DefaultShardTable
	}
	if !tableName.MatchString(cfg.Table) {
		return nil, fmt.Errorf("kinesis: subscriber: table %q is not a plain SQL name", cfg.Table)
	}
	if cfg.LeaseTimeout <= 0 {
		cfg.LeaseTimeout = 30 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	conn, err := cfg.Settings.Load(ctx, 3)
	if err != nil {
		return nil, err
	}
	s := &Subscriber{cfg: cfg, conn: conn, client: awskinesis.NewFromConfig(conn.Config), log: cfg.Logger,
		leases: &leaseStore{db: cfg.DB, dialect: cfg.Dialect, table: cfg.Table, stream: cfg.Stream, group: cfg.Group},
		me:     owner(), out: make(chan broker.Received), readers: map[string]*shardReader{}, seen: map[string]sighting{},
		stop: make(chan struct{})}
	if err := s.leases.migrate(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	s.wg.Go(s.coordinate)
	return s, nil
}

// owner names this process in the lease table.
func owner() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Receive waits for a record or ctx's end, then takes up to most records
// already waiting.
func (s *Subscriber) Receive(ctx context.Context, most int) ([]broker.Received, error) {
	var got []broker.Received
	select {
	case m := <-s.out:
		got = append(got, m)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.stop:
		return nil, errors.New("kinesis: subscriber is closed")
	}
	for len(got) < most {
		select {
		case m := <-s.out:
			got = append(got, m)
		default:
			return got, nil
		}
	}
	return got, nil
}

// coordinate renews, checkpoints, finishes and takes leases every third of
// the lease timeout until Close.
func (s *Subscriber) coordinate() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	tick := time.NewTicker(s.cfg.LeaseTimeout / 3)
	defer tick.Stop()
	for {
		if err := s.round(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("kinesis: lease round failed", "stream", s.cfg.Stream, "group", s.cfg.Group, "err", err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			s.releaseAll()
			return
		}
	}
}

// round is one pass of the coordinator.
func (s *Subscriber) round(ctx context.Context) error {
	if err := s.syncShards(ctx); err != nil {
		return fmt.Errorf("list shards: %w", err)
	}
	if err := s.renew(ctx); err != nil {
		return fmt.Errorf("renew: %w", err)
	}
	return s.takeShards(ctx)
}

// syncShards adds a row for every shard of the stream not in the table.
func (s *Subscriber) syncShards(ctx context.Context) error {
	known, err := s.leases.all(ctx)
	if err != nil {
		return err
	}
	in := &awskinesis.ListShardsInput{}
	in.StreamName, in.StreamARN = streamInput(s.cfg.Stream)
	for {
		out, err := s.client.ListShards(ctx, in)
		if err != nil {
			return err
		}
		for _, sh := range out.Shards {
			var parents []string
			for _, p := range []*string{sh.ParentShardId, sh.AdjacentParentShardId} {
				if aws.ToString(p) != "" {
					parents = append(parents, aws.ToString(p))
				}
			}
			if err := s.leases.add(ctx, aws.ToString(sh.ShardId), parents, known); err != nil {
				return err
			}
		}
		if out.NextToken == nil {
			return nil
		}
		in = &awskinesis.ListShardsInput{NextToken: out.NextToken}
	}
}

// renew renews every lease held, with its checkpoint; a finished shard is
// marked ShardEnd and given up; a lost lease stops its reader.
func (s *Subscriber) renew(ctx context.Context) error {
	s.mu.Lock()
	readers := make(map[string]*shardReader, len(s.readers))
	for k, v := range s.readers {
		readers[k] = v
	}
	s.mu.Unlock()
	for shard, r := range readers {
		checkpoint, finished := r.state()
		if finished {
			if err := s.leases.release(ctx, shard, s.me, ShardEnd); err != nil {
				return err
			}
			s.drop(shard, r, false)
			continue
		}
		ok, err := s.leases.renew(ctx, shard, s.me, checkpoint)
		if err != nil {
			return err
		}
		if !ok {
			s.log.Warn("kinesis: lease lost; another process reads the shard now", "stream", s.cfg.Stream, "shard", shard)
			s.drop(shard, r, true)
			continue
		}
		if checkpoint != "" {
			r.wrote(checkpoint)
		}
	}
	return nil
}

// drop stops a reader and forgets it.
func (s *Subscriber) drop(shard string, r *shardReader, lost bool) {
	r.halt(lost)
	s.mu.Lock()
	delete(s.readers, shard)
	s.mu.Unlock()
}

// takeShards takes free or expired shards whose parents are finished, up
// to a fair share of them.
func (s *Subscriber) takeShards(ctx context.Context) error {
	rows, err := s.leases.all(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	owners := map[string]bool{s.me: true}
	var ready []leaseRow
	for _, r := range rows {
		if r.checkpoint == ShardEnd || !parentsDone(r, rows) {
			continue
		}
		ready = append(ready, r)
		if r.owner != "" && r.owner != s.me && !s.expired(r, now) {
			owners[r.owner] = true
		}
	}
	s.mu.Lock()
	mine := len(s.readers)
	s.mu.Unlock()
	share := (len(ready) + len(owners) - 1) / len(owners)
	for _, r := range ready {
		if mine >= share {
			break
		}
		if r.owner == s.me || (r.owner != "" && !s.expired(r, now)) {
			continue
		}
		ok, err := s.leases.take(ctx, r, s.me)
		if err != nil {
			return err
		}
		if ok {
			s.start(r)
			mine++
		}
	}
	return nil
}

// expired reports whether a lease held by another process has not been
// renewed for LeaseTimeout, by this process's clock since it first saw
// the lease as it is.
func (s *Subscriber) expired(r leaseRow, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, ok := s.seen[r.shard]
	if !ok || seen.owner != r.owner || seen.counter != r.counter {
		s.seen[r.shard] = sighting{owner: r.owner, counter: r.counter, at: now}
		return false
	}
	return now.Sub(seen.at) >= s.cfg.LeaseTimeout
}

// parentsDone reports whether every parent of a shard still in the table
// is read to its end and applied.
func parentsDone(r leaseRow, rows map[string]leaseRow) bool {
	for _, p := range r.parents {
		if parent, ok := rows[p]; ok && parent.checkpoint != ShardEnd {
			return false
		}
	}
	return true
}

// start starts the reader of a shard just taken.
func (s *Subscriber) start(r leaseRow) {
	rd := newShardReader(s, r.shard, r.checkpoint)
	s.mu.Lock()
	s.readers[r.shard] = rd
	s.mu.Unlock()
	go rd.run()
}

// releaseTimeout bounds giving the leases up at Close.
const releaseTimeout = 10 * time.Second

// releaseAll stops every reader and gives its lease up with its
// checkpoint, so that another process takes the shard at once.
func (s *Subscriber) releaseAll() {
	s.mu.Lock()
	readers := s.readers
	s.readers = map[string]*shardReader{}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	for shard, r := range readers {
		r.halt(false)
		checkpoint, finished := r.state()
		if finished {
			checkpoint = ShardEnd
		}
		if err := s.leases.release(ctx, shard, s.me, checkpoint); err != nil {
			s.log.Warn("kinesis: releasing a lease failed; another process takes the shard after the lease timeout",
				"stream", s.cfg.Stream, "shard", shard, "err", err)
		}
	}
}

// warn logs a reader's failure, unless the reader is stopping.
func (s *Subscriber) warn(ctx context.Context, what, shard string, err error) {
	if ctx.Err() == nil {
		s.log.Warn(what+" failed", "stream", s.cfg.Stream, "shard", shard, "err", err)
	}
}

// Rewind implements broker.Rewinder: every checkpoint of the group is
// forgotten, so the shards are read again from their oldest records. Stop
// the group's other processes first.
func (s *Subscriber) Rewind(ctx context.Context) error {
	s.mu.Lock()
	readers := s.readers
	s.readers = map[string]*shardReader{}
	s.mu.Unlock()
	for _, r := range readers {
		r.halt(true)
	}
	return s.leases.reset(ctx)
}

// Close stops reading and gives the leases up with their checkpoints.
func (s *Subscriber) Close() error {
	s.once.Do(func() { close(s.stop) })
	s.wg.Wait()
	s.conn.Close()
	return nil
}
