package cli

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/heraldhq/herald/broker/mqtt"
	"github.com/heraldhq/herald/internal/testenv"
)

// TestDemoOnOtherBrokers runs `herald demo --broker NAME --gifts 300
// --exit` on the machine's mosquitto and on pstest (PUBSUB_EMULATOR_HOST):
// the gift wall, fed by the broker's own subscriber, matches the ledger.
func TestDemoOnOtherBrokers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole demo twice")
	}
	run := func(t *testing.T, dir string, args ...string) (int, string) {
		c := startChild(t, dir, args...)
		select {
		case <-c.done:
			c.done <- nil
		case <-time.After(3 * time.Minute):
			t.Fatalf("herald %v did not finish within 3 minutes:\n%s", args, c.stderr.String())
		}
		return c.cmd.ProcessState.ExitCode(), c.stderr.String()
	}
	if raceEnabled {
		run = plainHerald(t)
	}
	demo := func(t *testing.T, broker string) {
		args := []string{"demo", "--broker", broker, "--gifts", "300", "--exit", "--rate", "1000", "--launch-delay", "500ms"}
		code, out := run(t, t.TempDir(), args...)
		if code != ExitOK || !strings.Contains(out, "verified: 300 gifts, gift wall matches ledger\n") {
			t.Fatalf("herald %v: exit %d, want 0 and the verified line:\n%s", args, code, out)
		}
	}
	t.Run("mqtt", func(t *testing.T) {
		url := testenv.RequireMQTT(t)
		host, _ := os.Hostname()
		clean := func() { _ = mqtt.DeleteSession(context.Background(), mqtt.Config{URL: url}, "gift_wall-"+host) }
		clean() // a session an earlier run left would hand its messages to this one's wall
		t.Cleanup(clean)
		demo(t, "mqtt")
	})
	t.Run("pubsub", func(t *testing.T) {
		srv := pstest.NewServer()
		t.Cleanup(func() { _ = srv.Close() })
		for _, topic := range []string{"giftwall-wallet", "giftwall-room", "giftwall-robot"} {
			if _, err := srv.GServer.CreateTopic(context.Background(), &pb.Topic{Name: "projects/herald/topics/" + topic}); err != nil {
				t.Fatal(err)
			}
		}
		t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
		demo(t, "pubsub")
	})
}

// Rule: a broker the demo has no config for is bad usage, naming those
// it has.
func TestDemoUnknownBroker(t *testing.T) {
	code, _, stderr := cliRun(t, "demo", "--broker", "carrier-pigeon")
	if code != ExitUsage || !strings.Contains(stderr, "mqtt") || !strings.Contains(stderr, "pubsub") {
		t.Fatalf("exit %d (%s), want %d naming the brokers", code, stderr, ExitUsage)
	}
}
