package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testKey = []byte("a test key of some thirty-two by")

var testSecret = "whsec_" + base64.StdEncoding.EncodeToString(testKey)

// received is one request as the receiver saw it.
type received struct {
	header http.Header
	body   []byte
}

// receiver is an httptest server that verifies the Standard Webhooks
// signature on its own (not with Sign) and records what arrived.
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(w http.ResponseWriter, r *http.Request) bool // true: handled
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{t: t}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.handle))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := verify(r.Header, body); err != nil {
		rc.t.Errorf("signature check: %v", err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	rc.mu.Lock()
	rc.got = append(rc.got, received{r.Header.Clone(), body})
	rc.mu.Unlock()
	if rc.answer != nil && rc.answer(w, r) {
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// verify checks a request the way a Standard Webhooks receiver does.
func verify(h http.Header, body []byte) error {
	id, ts, sig := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sig == "" {
		return fmt.Errorf("missing signing headers: id=%q ts=%q sig=%q", id, ts, sig)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("bad timestamp %q", ts)
	}
	mac := hmac.New(sha256.New, testKey)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, s := range strings.Fields(sig) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("signature %q does not match", sig)
}

func newPublisher(t testing.TB, cfg Config) *Publisher {
	t.Helper()
	if cfg.Secret == "" && cfg.SecretEnv == "" {
		cfg.Secret = testSecret
	}
	p, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func message(url, key string, n int) broker.Message {
	return broker.Message{
		Destination: url,
		Event: herald.Event{
			ID: herald.NewID(), Tenant: "app1", Topic: "room", Type: "RoomOpened",
			PartitionKey: key, Payload: []byte(fmt.Sprintf(`{"n":%d}`, n)),
			Headers:   map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
			CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		},
	}
}

func TestPublishDeliversSignedCloudEvents(t *testing.T) {
	rc := newReceiver(t)
	p := newPublisher(t, Config{Source: "test-src"})
	var msgs []broker.Message
	for i := range 20 {
		msgs = append(msgs, message(rc.srv.URL+"/hook", fmt.Sprintf("k%d", i%3), i))
	}
	msgs[0].Event.Headers["content-type"] = "application/cloudevents-test"
	res := p.Publish(context.Background(), msgs)
	if len(res) != len(msgs) {
		t.Fatalf("one result per message: got %d for %d", len(res), len(msgs))
	}
	for i, r := range res {
		if r.Err != nil || r.Receipt.MessageID != msgs[i].Event.ID {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	byID := map[string]received{}
	perKey := map[string][]int{}
	for _, g := range rc.got {
		byID[g.header.Get("webhook-id")] = g
		var n int
		fmt.Sscanf(string(g.body), `{"n":%d}`, &n)
		k := g.header.Get("ce-subject")
		perKey[k] = append(perKey[k], n)
	}
	for i, m := range msgs {
		g, ok := byID[m.Event.ID]
		if !ok {
			t.Fatalf("message %d never arrived", i)
		}
		want := map[string]string{
			"ce-specversion": "1.0", "ce-id": m.Event.ID, "ce-type": "RoomOpened",
			"ce-source": "test-src", "ce-subject": m.Event.PartitionKey, "ce-tenant": "app1",
			"ce-time": "2026-01-02T03:04:05Z", "traceparent": m.Event.Headers["traceparent"],
			"Content-Type": "application/json",
		}
		if i == 0 {
			want["Content-Type"] = "application/cloudevents-test"
		}
		for k, v := range want {
			if got := g.header.Get(k); got != v {
				t.Errorf("message %d header %s = %q, want %q", i, k, got, v)
			}
		}
		if string(g.body) != string(m.Event.Payload) {
			t.Errorf("message %d body = %q", i, g.body)
		}
	}
	for k, ns := range perKey {
		for j := 1; j < len(ns); j++ {
			if ns[j] < ns[j-1] {
				t.Fatalf("key %s arrived out of order: %v", k, ns)
			}
		}
	}
}

func TestPublishClassifiesStatuses(t *testing.T) {
	rc := newReceiver(t)
	rc.answer = func(w http.ResponseWriter, r *http.Request) bool {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		switch code {
		case 429:
			w.Header().Set("Retry-After", "7")
		case 503:
			w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
		case 301:
			w.Header().Set("Location", "/elsewhere")
		}
		http.Error(w, "nope", code)
		return true
	}
	p := newPublisher(t, Config{})
	cases := []struct {
		code       int
		permanent  bool
		retryAfter time.Duration
	}{
		{200, false, 0}, {400, true, 0}, {404, true, 0}, {301, true, 0},
		{408, false, 0}, {429, false, 7 * time.Second}, {500, false, 0}, {503, false, 90 * time.Second},
	}
	var msgs []broker.Message
	for _, c := range cases {
		msgs = append(msgs, message(fmt.Sprintf("%s/%d", rc.srv.URL, c.code), "", 0))
	}
	res := p.Publish(context.Background(), msgs)
	for i, c := range cases {
		err := res[i].Err
		if c.code == 200 {
			if err != nil {
				t.Errorf("200: %v", err)
			}
			continue
		}
		var he *HTTPError
		if !errors.As(err, &he) || he.StatusCode != c.code {
			t.Errorf("%d: want *HTTPError, got %v", c.code, err)
			continue
		}
		if herald.IsPermanent(err) != c.permanent || herald.IsAmbiguous(err) {
			t.Errorf("%d: permanent=%v ambiguous=%v, want permanent=%v", c.code,
				herald.IsPermanent(err), herald.IsAmbiguous(err), c.permanent)
		}
		var rd interface{ RetryDelay() time.Duration }
		if !errors.As(err, &rd) {
			t.Fatalf("%d: no RetryDelay method", c.code)
		}
		if d := rd.RetryDelay(); d < c.retryAfter-2*time.Second || d > c.retryAfter {
			t.Errorf("%d: RetryAfter = %s, want about %s", c.code, d, c.retryAfter)
		}
	}
}

func TestPublishTimeoutIsAmbiguous(t *testing.T) {
	rc := newReceiver(t)
	unblock := make(chan struct{})
	rc.answer = func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-unblock:
		case <-r.Context().Done():
		}
		return false
	}
	defer close(unblock)
	p := newPublisher(t, Config{Timeout: 100 * time.Millisecond})
	start := time.Now()
	res := p.Publish(context.Background(), []broker.Message{message(rc.srv.URL, "", 0)})
	if !herald.IsAmbiguous(res[0].Err) {
		t.Fatalf("want ambiguous, got %v", res[0].Err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Publish took %s with a 100ms timeout", d)
	}
}

func TestPublishUnreachableIsRetryable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := newPublisher(t, Config{})
	res := p.Publish(context.Background(), []broker.Message{message("http://"+addr+"/x", "k", 0), message("http://"+addr+"/x", "k", 1)})
	for i, r := range res {
		if r.Err == nil || herald.IsPermanent(r.Err) || herald.IsAmbiguous(r.Err) {
			t.Fatalf("result %d: want a plain retryable error, got %v", i, r.Err)
		}
	}
}

func TestPublishRefusesWithoutSending(t *testing.T) {
	rc := newReceiver(t)
	p := newPublisher(t, Config{MaxPayload: 10})
	big := message(rc.srv.URL, "", 0)
	big.Event.Payload = make([]byte, 11)
	badHeader := message(rc.srv.URL, "", 0)
	badHeader.Event.Headers["x-bad"] = "line\nbreak"
	res := p.Publish(context.Background(), []broker.Message{big, message("ftp://x/y", "", 0), badHeader})
	if !errors.Is(res[0].Err, herald.ErrPayloadTooLarge) || !herald.IsPermanent(res[0].Err) {
		t.Errorf("too large: %v", res[0].Err)
	}
	for i := 1; i < 3; i++ {
		if !herald.IsPermanent(res[i].Err) {
			t.Errorf("result %d: want permanent, got %v", i, res[i].Err)
		}
	}
	if len(rc.got) != 0 {
		t.Fatalf("%d requests reached the receiver", len(rc.got))
	}
	if p.MaxPayload() != 10 {
		t.Fatalf("MaxPayload = %d", p.MaxPayload())
	}
}

func TestPublishPerHostLimit(t *testing.T) {
	rc := newReceiver(t)
	var inflight, peak atomic.Int32
	release := make(chan struct{})
	rc.answer = func(w http.ResponseWriter, r *http.Request) bool {
		n := inflight.Add(1)
		for {
			old := peak.Load()
			if n <= old || peak.CompareAndSwap(old, n) {
				break
			}
		}
		<-release
		inflight.Add(-1)
		return false
	}
	p := newPublisher(t, Config{MaxPerHost: 2})
	var msgs []broker.Message
	for i := range 10 {
		msgs = append(msgs, message(rc.srv.URL, fmt.Sprint(i), i))
	}
	done := make(chan []broker.Result)
	go func() { done <- p.Publish(context.Background(), msgs) }()
	deadline := time.Now().Add(5 * time.Second)
	for inflight.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling with a deadline
	}
	close(release)
	for i, r := range <-done {
		if r.Err != nil {
			t.Fatalf("result %d: %v", i, r.Err)
		}
	}
	if peak.Load() != 2 {
		t.Fatalf("peak concurrency %d, want 2", peak.Load())
	}
}

func TestConfigValidation(t *testing.T) {
	t.Setenv("HERALD_TEST_WEBHOOK_SECRET", testSecret)
	cases := []struct {
		cfg  Config
		want string // "" = valid
	}{
		{Config{Secret: testSecret}, ""},
		{Config{SecretEnv: "HERALD_TEST_WEBHOOK_SECRET"}, ""},
		{Config{}, "secret: required"},
		{Config{SecretEnv: "HERALD_TEST_WEBHOOK_UNSET"}, "secret_env"},
		{Config{Secret: "plain"}, "secret: want the form whsec_"},
		{Config{Secret: "whsec_!!!"}, "not valid base64"},
		{Config{Secret: testSecret, MaxPerHost: -1}, "max_per_host"},
		{Config{Secret: testSecret, Timeout: -1}, "timeout"},
		{Config{Secret: testSecret, MaxPayload: -1}, "max_payload"},
	}
	for _, c := range cases {
		p, err := New(context.Background(), c.cfg)
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.cfg, err)
				continue
			}
			p.Close()
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.cfg, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), testSecret[6:]) {
			t.Errorf("error leaks the secret: %v", err)
		}
	}
}

func TestPublishAfterClose(t *testing.T) {
	p := newPublisher(t, Config{})
	p.Close()
	res := p.Publish(context.Background(), []broker.Message{message("http://127.0.0.1:1/", "", 0)})
	if !errors.Is(res[0].Err, ErrClosed) {
		t.Fatalf("want ErrClosed, got %v", res[0].Err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"": 0, "0": 0, "-5": 0, "12": 12 * time.Second, "junk": 0, "99999999999": maxRetryAfter,
		now.Add(time.Minute).Format(http.TimeFormat):  time.Minute,
		now.Add(-time.Minute).Format(http.TimeFormat): 0,
	}
	for in, want := range cases {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestSignKnownVector(t *testing.T) {
	// The example from the Standard Webhooks specification.
	key, _ := base64.StdEncoding.DecodeString("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	got := Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}
