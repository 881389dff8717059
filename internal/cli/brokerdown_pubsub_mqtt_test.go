package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/heraldhq/herald/internal/testenv"
)

// Rule: as TestRunStartsWithBrokerDown, for Pub/Sub (pstest, started on
// the configured emulator_host once the relay runs) and MQTT (a mosquitto
// of the test's own).
func TestRunStartsWithBrokerDownPubSubMQTT(t *testing.T) {
	t.Run("pubsub", func(t *testing.T) { runWithBrokerDown(t, downPubSub(t)) })
	t.Run("mqtt", func(t *testing.T) { runWithBrokerDown(t, downMQTT(t)) })
}

func downPubSub(t *testing.T) downBroker {
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	return downBroker{
		yaml: fmt.Sprintf("{type: pubsub, project: herald-test, emulator_host: %q}", addr),
		up: func(t *testing.T) {
			srv := pstest.NewServerWithAddress(addr)
			t.Cleanup(func() { _ = srv.Close() })
			if _, err := srv.GServer.CreateTopic(context.Background(), &pb.Topic{Name: "projects/herald-test/topics/down.t"}); err != nil {
				t.Fatal(err)
			}
		}, refused: true}
}

func downMQTT(t *testing.T) downBroker {
	srv := testenv.NewMosquitto(t)
	return downBroker{yaml: fmt.Sprintf("{type: mqtt, url: %q, connect_timeout: 500ms}", srv.URL()),
		up: func(t *testing.T) { srv.Start(t) }, refused: true}.withDestination("down/{topic}")
}

// Rule: credentials that cannot be found stop `herald run` at start with
// exit 2 naming the key: Pub/Sub outside the emulator without any, MQTT's
// password_env naming an unset variable.
func TestRunCredentialsMissing(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	t.Setenv("PUBSUB_EMULATOR_HOST", "")
	t.Setenv("GCE_METADATA_HOST", "")
	t.Setenv("CLOUDSDK_CONFIG", t.TempDir())
	t.Setenv("HERALD_TEST_NO_SUCH_PASSWORD", "")
	for broker, want := range map[string]string{
		"{type: pubsub, project: herald-test}":                                       "brokers.down: pubsub: credentials_file: no Google Cloud credentials found",
		"{type: mqtt, username: herald, password_env: HERALD_TEST_NO_SUCH_PASSWORD}": "brokers.down: mqtt: password_env: environment variable HERALD_TEST_NO_SUCH_PASSWORD",
	} {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "herald.yaml")
		yaml := fmt.Sprintf("store: {driver: sqlite, dsn: %s}\nbrokers:\n  down: %s\nlanes:\n  - {name: main, table: main_outbox, broker: down, destination: t}\n",
			filepath.Join(dir, "h.db"), broker)
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := cliRun(t, "run", "--config", cfg)
		if code != ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want %d naming %s", broker, code, stderr, ExitUsage, want)
		}
	}
}
