package cli

import (
	"context"
	"fmt"
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
