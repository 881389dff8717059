package seedwallet_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker/rocketmq/rmqfake"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/daemon"
	"github.com/heraldhq/herald/drivers"
	"github.com/heraldhq/herald/examples/seedwallet"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store/sqlite"
)

// Rule: herald.yaml adopts the wallet table from configuration alone: run
// as `herald run` runs it, on the table the old worker was relaying (10
// rows published and marked, 5 published and not), it relays the rest to
// RocketMQ with the old worker's message and keeps the gift wall, each
// gift once, from both producers' messages.
func TestAdoptSeedWalletFromConfig(t *testing.T) {
	c, err := rmqfake.New(rmqfake.Options{MaxLongPoll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	dir := t.TempDir()
	text, err := os.ReadFile("herald.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yaml := strings.NewReplacer("127.0.0.1:9876", c.NameServer(), "dsn: wallet.db", "dsn: "+filepath.Join(dir, "wallet.db")).
		Replace(string(text)) + "admin: {addr: \"off\"}\n"
	f, err := config.Parse([]byte(yaml), "herald.yaml", config.Drivers{Brokers: drivers.Brokers(), Stores: drivers.Stores()})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "wallet.db"), sqlite.Options{})
	s := opened(t, db, err, "")
	sd := (&seed{s: s, table: "wallet_outbox", wall: "gift_wall", ledger: "herald_projection_events"}).write(t, 40)
	old, err := seedwallet.StartOldWorker(s.DB(), s.Dialect(), sd.table, []string{c.NameServer()}, "wallet")
	if err != nil {
		t.Fatal(err)
	}
	_, err = old.Publish(context.Background(), 10, true)
	crashed, err2 := old.Publish(context.Background(), 5, false)
	if err != nil || err2 != nil || old.Close() != nil {
		t.Fatalf("old worker: %v, %v", err, err2)
	}
	stop := run(t, func(ctx context.Context) error {
		return daemon.Run(ctx, f, daemon.Options{Logger: slog.New(slog.DiscardHandler), Say: func(string, ...any) {}})
	})
	testenv.WaitFor(t, time.Minute, 20*time.Millisecond, "every row delivered and all 45 messages acked", func() bool {
		var acked int64
		for q := range 4 {
			off, _ := c.CommittedOffset("seed_gift_wall", seedwallet.Topic, q)
			acked += off
		}
		return countRows(t, sd.s, sd.table, "delivered") == len(sd.types) && acked == int64(len(sd.types)+len(crashed))
	})
	stop()
	checkMessages(t, c.Messages(seedwallet.Topic), sd, crashed, tagModes[0])
	sd.checkWall(t)
}
