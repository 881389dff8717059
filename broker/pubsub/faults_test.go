package pubsub

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/internal/testenv"
)

// refuse is a pstest reactor answering every Publish with an error.
type refuse struct{ code codes.Code }

func (r refuse) React(any) (bool, any, error) {
	return true, &pb.PublishResponse{}, status.Error(r.code, "refused by the test")
}

func message(dest, key string) broker.Message {
	return broker.Message{Destination: dest, Attempt: 1, Event: herald.Event{
		ID: herald.NewID(), Topic: "t", Type: "T", PartitionKey: key, Payload: []byte(`{"n":1}`)}}
}

// Rule: throttling (RESOURCE_EXHAUSTED) is unavailable, not permanent and
// not ambiguous: nothing was stored, no attempt is spent, the breaker
// pauses the lanes. INVALID_ARGUMENT is permanent; NOT_FOUND is plain
// retryable.
func TestServerRefusals(t *testing.T) {
	for code, want := range map[codes.Code]string{
		codes.ResourceExhausted: "unavailable", codes.InvalidArgument: "permanent", codes.NotFound: "retryable",
		codes.Unavailable: "unavailable ambiguous",
	} {
		t.Run(code.String(), func(t *testing.T) {
			srv := fake(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: refuse{code}})
			topic := testenv.Name("herald-refused")
			topicWithReader(t, admin(t, srv.Addr), topic)
			p := newPublisher(t, Config{EmulatorHost: srv.Addr})
			res := publish(p, message(topic, "k"), message(topic, "k"))
			err := res[0].Err
			got := []string{}
			if herald.IsUnavailable(err) {
				got = append(got, "unavailable")
			}
			if herald.IsPermanent(err) {
				got = append(got, "permanent")
			}
			if herald.IsAmbiguous(err) {
				got = append(got, "ambiguous")
			}
			if len(got) == 0 && err != nil {
				got = append(got, "retryable")
			}
			if strings.Join(got, " ") != want {
				t.Errorf("%v: classified %v (%v), want %s", code, got, err, want)
			}
			// One request carried both (the same answer), or the second
			// came after the key paused (held back, saying nothing).
			same := res[1].Err != nil && herald.IsPermanent(res[1].Err) == herald.IsPermanent(err) &&
				herald.IsUnavailable(res[1].Err) == herald.IsUnavailable(err)
			if held := errors.Is(res[1].Err, broker.ErrHeldBack) && !herald.IsUnavailable(res[1].Err); !same && !held {
				t.Errorf("the next message of the key: %v, want as the first or held back", res[1].Err)
			}
			if n := len(srv.Messages()); n != 0 {
				t.Errorf("%d messages stored, want none", n)
			}
		})
	}
}

// Rule: what Pub/Sub would refuse is permanent before it is sent, naming
// the header at fault (the partition key travels as ce-subject, whose
// limit, 1024 bytes, is the ordering key's too).
func TestMessageLimits(t *testing.T) {
	srv := fake(t)
	topic := testenv.Name("herald-limits")
	topicWithReader(t, admin(t, srv.Addr), topic)
	p := newPublisher(t, Config{EmulatorHost: srv.Addr})
	long := message(topic, "")
	long.Event.Headers = map[string]string{"x-long": strings.Repeat("v", 1025)}
	goog := message(topic, "")
	goog.Event.Headers = map[string]string{"googclient_x": "v"}
	key := message(topic, strings.Repeat("k", 1025))
	for name, m := range map[string]broker.Message{"x-long": long, "googclient_x": goog, "ce-subject": key} {
		res := publish(p, m)
		if !herald.IsPermanent(res[0].Err) || !strings.Contains(res[0].Err.Error(), name) {
			t.Errorf("%s: %v, want a permanent error naming it", name, res[0].Err)
		}
	}
}

// Rule: outside the emulator, credentials that cannot be found are an
// error of the config naming credentials_file, found without a network
// call; a file that is there but is no credentials file is one too.
func TestCredentialsMissing(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	t.Setenv("PUBSUB_EMULATOR_HOST", "")
	t.Setenv("GCE_METADATA_HOST", "")
	t.Setenv("CLOUDSDK_CONFIG", t.TempDir())
	if onGoogleCloud() {
		t.Skip("this machine says it runs on Google Cloud: the metadata server would give credentials")
	}
	err := (&BrokerConfig{Config{Project: "p"}}).Validate()
	if err == nil || !strings.Contains(err.Error(), "credentials_file") {
		t.Fatalf("no credentials anywhere: %v, want an error naming credentials_file", err)
	}
	bad := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(bad, []byte(`{"type":"nonsense"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	err = (&BrokerConfig{Config{Project: "p", CredentialsFile: bad}}).Validate()
	if err == nil || !strings.Contains(err.Error(), "credentials_file") || !strings.Contains(err.Error(), "nonsense") {
		t.Fatalf("a file of no known type: %v", err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "missing.json"))
	if err := (&BrokerConfig{Config{Project: "p"}}).Validate(); err == nil || !strings.Contains(err.Error(), "GOOGLE_APPLICATION_CREDENTIALS") {
		t.Fatalf("GOOGLE_APPLICATION_CREDENTIALS naming no file: %v", err)
	}
	if err := (&BrokerConfig{Config{Project: "p", EmulatorHost: "127.0.0.1:8085"}}).Validate(); err != nil {
		t.Fatalf("the emulator needs no credentials: %v", err)
	}
	if err := (&BrokerConfig{Config{EmulatorHost: "127.0.0.1:8085"}}).Validate(); err == nil || !strings.Contains(err.Error(), "project") {
		t.Fatalf("no project: %v", err)
	}
}
