// Command giftwall runs the gift wall reference application as a program of
// its own: the same Demo that `herald demo` shows, with plain progress lines.
//
//	go run ./examples/giftwall/cmd/giftwall --gifts 1000
//	go run ./examples/giftwall/cmd/giftwall --config examples/giftwall/mariadb.yaml --gifts 1000
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/drivers"
	"github.com/heraldhq/herald/examples/giftwall"
)

func main() {
	cfgPath := flag.String("config", "", "config file (default: SQLite and embedded NATS in the working directory)")
	gifts := flag.Int64("gifts", 1000, "gifts to pay before verifying")
	rate := flag.Float64("rate", 2000, "events per second (0: as fast as possible)")
	failRate := flag.Float64("fail-rate", 0, "fraction of publishes to fail")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *cfgPath, *gifts, *rate, *failRate); err != nil {
		fmt.Fprintln(os.Stderr, "giftwall:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfgPath string, gifts int64, rate, failRate float64) error {
	// The brokers and databases the herald binary ships; a program of its
	// own may list fewer (the demo needs sqlite and nats by default).
	drv := config.Drivers{Brokers: drivers.Brokers(), Stores: drivers.Stores()}
	file, err := giftwall.DemoConfig(drv)
	if cfgPath != "" {
		file, err = config.Load(cfgPath, drv)
	}
	if err != nil {
		return err
	}
	d, err := giftwall.StartDemo(ctx, giftwall.DemoOptions{File: file, FailRate: failRate,
		Traffic: giftwall.TrafficConfig{Gifts: gifts, Rate: rate},
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		return err
	}
	defer d.Stop()
	for _, e := range d.Endpoints() {
		fmt.Println(e)
	}
	last := time.Now()
	s, err := d.Settle(ctx, time.Minute, func(s giftwall.Snapshot) {
		if time.Since(last) >= time.Second {
			fmt.Printf("%5.1fs gifts %d/%d, published %d, retries %d, projected %d\n",
				s.Elapsed.Seconds(), s.Gifts, gifts, s.Delivered, s.Retried, s.Projected)
			last = time.Now()
		}
	})
	if err != nil {
		return err
	}
	rep, err := d.Verify(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("%s (in %.1fs)\n", rep, s.Elapsed.Seconds())
	if !rep.OK() {
		return fmt.Errorf("the gift wall does not match the ledger")
	}
	return nil
}
