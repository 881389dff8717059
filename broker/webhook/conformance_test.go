package webhook

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker/brokertest"
)

// TestConformance runs the broker suite against a receiver that verifies
// every signature and can be stopped and started on the same address.
func TestConformance(t *testing.T) {
	brokertest.Run(t, brokertest.Target{
		Guarantees: Guarantees,
		MessageID:  true, // webhook-id
		New: func(t *testing.T) *brokertest.Setup {
			rs := startRestartable(t)
			p := newPublisher(t, Config{MaxPayload: 64 << 10, Timeout: 5 * time.Second})
			return &brokertest.Setup{
				Publisher:   p,
				Destination: func(name string) string { return "http://" + rs.addr + "/" + name },
				Read:        rs.read,
				Stop:        func(t *testing.T) { rs.stop() },
				Start:       rs.start,
			}
		},
	})
}

// restartable is a signature-checking receiver on a fixed loopback address.
type restartable struct {
	t    *testing.T
	addr string
	srv  *http.Server
	done chan struct{}
	mu   sync.Mutex
	got  []brokertest.Received
}

func startRestartable(t *testing.T) *restartable {
	rs := &restartable{t: t, addr: "127.0.0.1:0"}
	rs.start(t)
	t.Cleanup(rs.stop)
	return rs
}

func (rs *restartable) start(t *testing.T) {
	ln, err := net.Listen("tcp", rs.addr)
	if err != nil {
		t.Fatalf("listen %s: %v", rs.addr, err)
	}
	rs.addr = ln.Addr().String()
	rs.srv = &http.Server{Handler: http.HandlerFunc(rs.handle), ReadHeaderTimeout: 5 * time.Second}
	rs.done = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	}(rs.srv, rs.done)
}

func (rs *restartable) stop() {
	if rs.srv == nil {
		return
	}
	_ = rs.srv.Close()
	<-rs.done
	rs.srv = nil
}

func (rs *restartable) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := verify(r.Header, body); err != nil {
		rs.t.Errorf("signature check: %v", err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	h := map[string]string{}
	for k, v := range r.Header {
		h[k] = strings.Join(v, ",")
	}
	rs.mu.Lock()
	rs.got = append(rs.got, brokertest.Received{
		Destination: "http://" + rs.addr + r.URL.Path, Headers: h, Body: body,
		MessageID: r.Header.Get("webhook-id"),
	})
	rs.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// read returns what arrived for dest; requests are recorded before the
// answer, so everything acknowledged is already there.
func (rs *restartable) read(t *testing.T, dest string, want int) []brokertest.Received {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []brokertest.Received
	for _, g := range rs.got {
		if g.Destination == dest {
			out = append(out, g)
		}
	}
	return out
}
