package kinesis_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awskinesis "github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/internal/awstest"
	"github.com/heraldhq/herald/broker/kinesis"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/projector/projectortest"
)

// source is the subscription a crash child reads.
type source struct {
	Endpoint string `json:"endpoint"`
	Stream   string `json:"stream"`
	Group    string `json:"group"`
}

// crashLease is the lease timeout of the crash test: the killed child's
// shards go to the new subscriber after it.
const crashLease = 1500 * time.Millisecond

func init() {
	if projectortest.IsCrashChild() {
		testenv.NoAWSMetadata()
		projectortest.CrashChild(func(raw json.RawMessage, s projectortest.Store) (broker.Subscriber, error) {
			var src source
			if err := json.Unmarshal(raw, &src); err != nil {
				return nil, err
			}
			return kinesis.NewSubscriber(context.Background(), subscriberConfig(src, s, crashLease))
		})
	}
}

// subscriberConfig is a subscriber on src keeping its leases in s.
func subscriberConfig(src source, s projectortest.Store, lease time.Duration) kinesis.SubscriberConfig {
	return kinesis.SubscriberConfig{Settings: awstest.Settings(src.Endpoint), Stream: src.Stream, Group: src.Group,
		DB: s.DB(), Dialect: s.Dialect(), LeaseTimeout: lease, PollInterval: 50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)}
}

// subscribe opens a subscriber on src, closed when the test ends.
func subscribe(tb testing.TB, src source, s projectortest.Store, lease time.Duration) broker.Subscriber {
	tb.Helper()
	sub, err := kinesis.NewSubscriber(context.Background(), subscriberConfig(src, s, lease))
	if err != nil {
		tb.Fatal(err)
	}
	return sub
}

// publishTo returns a function that publishes events to stream.
func publishTo(tb testing.TB, endpoint, stream string) func(tb testing.TB, evs []herald.Event) {
	p, err := kinesis.New(context.Background(), kinesis.Config{Settings: awstest.Settings(endpoint)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return awstest.PublishTo(p, stream)
}

// TestSubscriberProjects10k projects 10,000 events from a stream of four
// shards, read by two projector processes sharing the shards' leases in
// the projection's database, into a counting read model; each key's
// events are applied in order.
func TestSubscriberProjects10k(t *testing.T) {
	srv := testenv.Kinesalite.Start(t)
	src := source{Endpoint: srv.URL, Stream: awstest.CreateStream(t, awstest.KinesisClient(t, srv.URL), "sub", 4), Group: "count"}
	projectortest.RunSource(t, projectortest.SourceConfig{
		SubscribeIn: func(tb testing.TB, s projectortest.Store) broker.Subscriber {
			return subscribe(tb, src, s, 10*time.Second)
		},
		Publish:  publishTo(t, srv.URL, src.Stream),
		KeyOrder: true,
	})
}

// TestSubscriberKilledAfterCommitBeforeAck: a projector process is killed
// with SIGKILL after its ledger commit and before its ack; its lease runs
// out, a new subscriber takes the shard from the last checkpoint, applies
// the record zero more times and acks it.
func TestSubscriberKilledAfterCommitBeforeAck(t *testing.T) {
	srv := testenv.Kinesalite.Start(t)
	src := source{Endpoint: srv.URL, Stream: awstest.CreateStream(t, awstest.KinesisClient(t, srv.URL), "crash", 1), Group: "count"}
	projectortest.RunKilledBeforeAck(t, projectortest.KilledConfig{
		Child:   src,
		Publish: publishTo(t, srv.URL, src.Stream),
		Subscribe: func(tb testing.TB, s projectortest.Store) broker.Subscriber {
			return subscribe(tb, src, s, crashLease)
		},
	})
}

// TestSubscriberReshard: events published before and after a shard is
// split are each applied once, and each key's in order: the children are
// read only once the parent is read to its end and applied, though they
// hold records from the start.
func TestSubscriberReshard(t *testing.T) {
	srv := testenv.Kinesalite.Start(t)
	c := awstest.KinesisClient(t, srv.URL)
	src := source{Endpoint: srv.URL, Stream: awstest.CreateStream(t, c, "reshard", 1), Group: "count"}
	publish := publishTo(t, srv.URL, src.Stream)
	const keys, perKey = 20, 30
	phase := func(from int) {
		var evs []herald.Event
		for i := from; i < from+perKey/2; i++ {
			for k := range keys {
				evs = append(evs, projectortest.Event(fmt.Sprintf("k%02d", k), int64(i+1)))
			}
		}
		publish(t, evs)
	}
	phase(0)
	split(t, c, src.Stream)
	phase(perKey / 2)

	s := projectortest.SQLite(filepath.Join(t.TempDir(), "reshard.db"))(t)
	model := projectortest.NewModel(t, s)
	table := projectortest.Name("herald_pe")
	if err := s.MigrateProjections(context.Background(), table); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	last := map[string]int64{}
	var disorder []string
	p, err := projector.New(projector.Config{Settings: projector.Settings{Name: "count", Table: table}, Store: s, Logger: slog.New(slog.DiscardHandler),
		Handler: func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
			var pl projectortest.Payload
			_ = json.Unmarshal(ev.Payload, &pl)
			mu.Lock()
			if pl.Seq < last[pl.Key] && len(disorder) < 5 {
				disorder = append(disorder, fmt.Sprintf("%s: %d after %d", pl.Key, pl.Seq, last[pl.Key]))
			}
			last[pl.Key] = max(last[pl.Key], pl.Seq)
			mu.Unlock()
			return model.Bump(ctx, tx, ev)
		}})
	if err != nil {
		t.Fatal(err)
	}
	sub := subscribe(t, src, s, 3*time.Second)
	t.Cleanup(func() { _ = sub.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, sub) }()
	projectortest.Eventually(t, time.Minute, "every event applied", func() bool {
		return model.Total(t, s.DB()) >= keys*perKey
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := model.Total(t, s.DB()); n != keys*perKey {
		t.Errorf("[exactly once] %d applications, want %d", n, keys*perKey)
	}
	if len(disorder) > 0 {
		t.Errorf("[parents first] events of a key applied out of order: %v", disorder)
	}
}

// split splits the stream's one shard in two at the middle of its hash
// key range and waits until the stream is active again.
func split(t *testing.T, c *awskinesis.Client, stream string) {
	t.Helper()
	ctx := context.Background()
	shards, err := c.ListShards(ctx, &awskinesis.ListShardsInput{StreamName: aws.String(stream)})
	if err != nil || len(shards.Shards) != 1 {
		t.Fatalf("list shards: %v (%d shards)", err, len(shards.Shards))
	}
	middle := new(big.Int).Lsh(big.NewInt(1), 127)
	if _, err := c.SplitShard(ctx, &awskinesis.SplitShardInput{StreamName: aws.String(stream),
		ShardToSplit: shards.Shards[0].ShardId, NewStartingHashKey: aws.String(middle.String())}); err != nil {
		t.Fatalf("split shard: %v", err)
	}
	awstest.WaitActive(t, c, stream)
}

// TestSubscriberHandsShardsOver: a subscriber that closes gives its
// leases up with their checkpoints, and another process of the group
// takes its shards at once (not after the lease timeout) and reads on.
func TestSubscriberHandsShardsOver(t *testing.T) {
	srv := testenv.Kinesalite.Start(t)
	src := source{Endpoint: srv.URL, Stream: awstest.CreateStream(t, awstest.KinesisClient(t, srv.URL), "handover", 2), Group: "count"}
	s := projectortest.SQLite(filepath.Join(t.TempDir(), "handover.db"))(t)
	const lease = 30 * time.Second // renewals every 10s: a takeover within that is a handover
	owners := func() map[string]string {
		rows, err := s.DB().Query("SELECT shard_id, owner FROM " + kinesis.DefaultShardTable)
		if err != nil {
			return nil
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var shard, owner string
			_ = rows.Scan(&shard, &owner)
			out[shard] = owner
		}
		return out
	}
	first := subscribe(t, src, s, lease)
	var before map[string]string
	testenv.WaitFor(t, 10*time.Second, 10*time.Millisecond, "the first subscriber holding both shards", func() bool {
		before = owners()
		return len(before) == 2 && before["shardId-000000000000"] != "" && before["shardId-000000000001"] != ""
	})
	second := subscribe(t, src, s, lease)
	t.Cleanup(func() { _ = second.Close() })
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	// Within half the lease timeout: leases not given up would only pass
	// to the second subscriber once they expire.
	testenv.WaitFor(t, lease/2, 10*time.Millisecond, "the second subscriber holding both shards", func() bool {
		now := owners()
		for shard, o := range now {
			if o == "" || o == before[shard] {
				return false
			}
		}
		return len(now) == 2
	})
}
