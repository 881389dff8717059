// Command pstestd serves pstest, the Google Cloud Pub/Sub client's
// in-process fake, on a loopback address until it is interrupted: a
// Pub/Sub emulator for `herald bench throughput`, the demo and manual
// runs on a machine without Google's emulator (scripts/bench-brokers.sh).
//
//	go run ./internal/pstestd -addr 127.0.0.1:8085 -project herald -topics bench,giftwall.wallet
//
// Its messages live in memory and are never deleted: it is for runs of
// minutes, not a server.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8085", "address to listen on")
	project := flag.String("project", "herald", "project of the topics")
	topics := flag.String("topics", "", "comma-separated topic ids to create")
	flag.Parse()
	srv := pstest.NewServerWithAddress(*addr)
	defer srv.Close()
	for _, t := range strings.Split(*topics, ",") {
		if t == "" {
			continue
		}
		name := "projects/" + *project + "/topics/" + t
		if _, err := srv.GServer.CreateTopic(context.Background(), &pb.Topic{Name: name}); err != nil {
			fmt.Fprintln(os.Stderr, "pstestd:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("pstestd: Pub/Sub fake on %s, project %s, topics %s\n", srv.Addr, *project, *topics)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
}
