package nats_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/brokertest"
	heraldnats "github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/natsembed"
	"github.com/heraldhq/herald/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// machineURL is the NATS server the tests expect on the machine
// (HERALD_TEST_NATS_URL, as for every other test, or the local default).
func machineURL() string { return testenv.NATSURL() }

// requireMachineNATS skips when the machine's NATS is unreachable, or fails
// under CI=true, where a missing server is a broken environment.
func requireMachineNATS(t *testing.T) string {
	t.Helper()
	u := machineURL()
	nc, err := natsgo.Connect(u, natsgo.Timeout(time.Second))
	if err == nil {
		nc.Close()
		return u
	}
	testenv.Unreachable(t, "NATS at "+u, err)
	return ""
}

func suffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newPublisher makes a publisher with its own stream, deleted at cleanup.
func newPublisher(t *testing.T, url, stream, prefix string) *heraldnats.Publisher {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := heraldnats.New(ctx, heraldnats.Config{
		URL: url, Stream: stream, Subjects: []string{prefix + ".>"}, CreateStream: true,
	})
	if err != nil {
		t.Fatalf("nats.New: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	if g := p.Guarantees(); g != declared {
		t.Errorf("Guarantees() = %+v, want %+v", g, declared)
	}
	return p
}

// deleteStream removes a test stream from a shared server.
func deleteStream(t *testing.T, url, stream string) {
	t.Cleanup(func() {
		nc, err := natsgo.Connect(url)
		if err != nil {
			return
		}
		defer nc.Close()
		_, _ = nc.Request("$JS.API.STREAM.DELETE."+stream, nil, 5*time.Second)
	})
}

func TestConformanceMachineNATS(t *testing.T) {
	url := requireMachineNATS(t)
	brokertest.Run(t, brokertest.Target{
		Guarantees:        declared,
		ReportsDuplicates: true,
		MessageID:         true,
		New: func(t *testing.T) *brokertest.Setup {
			sfx := suffix()
			stream, prefix := "HT_"+sfx, "ht."+sfx
			deleteStream(t, url, stream)
			p := newPublisher(t, url, stream, prefix)
			r := newReader(t, url, stream)
			return &brokertest.Setup{
				Publisher:   p,
				Destination: func(name string) string { return prefix + "." + name },
				Read:        r.Read,
			}
		},
	})
}

func TestConformanceEmbedded(t *testing.T) {
	brokertest.Run(t, brokertest.Target{
		Guarantees:        declared,
		ReportsDuplicates: true,
		MessageID:         true,
		New:               embeddedSetup,
	})
}

// embeddedSetup runs an embedded server in a temporary directory; Stop and
// Start restart it on the same port and directory.
func embeddedSetup(t *testing.T) *brokertest.Setup {
	cfg := natsembed.Config{Dir: t.TempDir(), Port: natsembed.RandomPort}
	srv := startEmbedded(t, cfg)
	cfg.Port = srv.Port()
	url := srv.ClientURL()
	t.Cleanup(func() { srv.Shutdown() })
	p := newPublisher(t, url, "HERALD", "herald")
	r := newReader(t, url, "HERALD")
	return &brokertest.Setup{
		Publisher:   p,
		Destination: func(name string) string { return "herald.test." + name },
		Read:        r.Read,
		Stop:        func(t *testing.T) { srv.Shutdown() },
		Start:       func(t *testing.T) { srv = startEmbedded(t, cfg) },
	}
}

func startEmbedded(t *testing.T, cfg natsembed.Config) *natsembed.Server {
	t.Helper()
	srv, err := natsembed.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// declared is what the publisher must report for a stream created with the
// default window; newPublisher checks it.
var declared = broker.Guarantees{Dedupe: true, DedupeWindow: 2 * time.Minute, KeyOrder: true}

// freePort returns a loopback port nothing listens on (for a moment).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
