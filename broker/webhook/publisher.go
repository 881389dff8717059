// Package webhook publishes events as HTTP POSTs in CloudEvents binary mode,
// signed per the Standard Webhooks specification.
//
// # The request
//
// One POST per event to the message's Destination (the lane's URL
// template). The body is the payload; Content-Type is the event's
// "content-type" header or application/json; the CloudEvents attributes
// travel as ce-* headers and the user headers (trace context included) as
// they are. Signing headers: webhook-id (the event id, the receiver's dedupe
// key), webhook-timestamp (Unix seconds) and webhook-signature
// ("v1," + base64 HMAC-SHA256 of "id.timestamp.body", see Sign).
//
// # Outcomes
//
// A 2xx answer is delivered. 408, 429 and 5xx are retryable *HTTPError
// values carrying the receiver's Retry-After. Any other status (3xx
// included: redirects are not followed, a signed POST must not be replayed
// elsewhere) is permanent. A request that failed after it was written, a
// timeout waiting for the answer for instance, is ambiguous; one that never
// left (connection refused) is retryable.
//
// # Order and concurrency
//
// Events of one partition key are posted one after another, each waiting
// for the previous answer; other keys run concurrently, at most MaxPerHost
// requests per host across all batches.
package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/internal/keyed"
)

// maxParallel bounds the goroutines one batch uses; the per-host limit
// bounds the requests.
const maxParallel = 64

// Guarantees: receivers dedupe by webhook-id if they do, Herald cannot know;
// per-key order holds because a key's requests are strictly sequential.
var Guarantees = broker.Guarantees{KeyOrder: true}

// Publisher posts events to webhook receivers. It is safe for concurrent use.
type Publisher struct {
	cfg    Config
	key    []byte
	client *http.Client
	hosts  hostLimits
	closed atomic.Bool
}

var (
	_ broker.Publisher = (*Publisher)(nil)
	_ broker.Limiter   = (*Publisher)(nil)
)

// New checks cfg and returns a Publisher. It opens no connection: receivers
// are reached per request. The context is unused and kept for symmetry with
// the other adapters.
func New(_ context.Context, cfg Config) (*Publisher, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	key, err := cfg.secretKey()
	if err != nil {
		return nil, err
	}
	transport := cfg.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxConnsPerHost = cfg.MaxPerHost
		t.MaxIdleConnsPerHost = cfg.MaxPerHost
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		transport = t
	}
	client := &http.Client{
		Transport: transport,
		// A 3xx is the receiver's misconfiguration: report it, do not
		// re-send the signed body somewhere else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Publisher{cfg: cfg, key: key, client: client, hosts: hostLimits{max: cfg.MaxPerHost}}, nil
}

// Guarantees returns what webhooks promise; see the package variable.
func (p *Publisher) Guarantees() broker.Guarantees { return Guarantees }

// MaxPayload implements broker.Limiter.
func (p *Publisher) MaxPayload() int { return p.cfg.MaxPayload }

// Publish posts every message and returns one result per message, in order.
func (p *Publisher) Publish(ctx context.Context, msgs []broker.Message) []broker.Result {
	if p.closed.Load() {
		results := make([]broker.Result, len(msgs))
		for i := range results {
			results[i].Err = ErrClosed
		}
		return results
	}
	return keyed.Run(ctx, msgs, maxParallel, func(ctx context.Context, i int) broker.Result {
		return p.post(ctx, msgs[i])
	})
}

// Close releases idle connections. Publish after Close fails with ErrClosed.
func (p *Publisher) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	p.client.CloseIdleConnections()
	return nil
}

// post sends one message and classifies the outcome.
func (p *Publisher) post(ctx context.Context, m broker.Message) broker.Result {
	req, err := p.request(m)
	if err != nil {
		return broker.Result{Err: herald.Permanent(err)}
	}
	release, err := p.hosts.acquire(ctx, req.URL.Host)
	if err != nil {
		return broker.Result{Err: fmt.Errorf("webhook: not sent, waiting for a connection slot to %s: %w", req.URL.Host, err)}
	}
	defer release()

	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }}
	req = req.WithContext(httptrace.WithClientTrace(ctx, trace))
	p.sign(req, m)

	resp, err := p.client.Do(req)
	if err != nil {
		err = fmt.Errorf("webhook: POST %s: %w", redact(req.URL), err)
		if wrote.Load() {
			// The receiver may have got it and acted on it.
			err = herald.Ambiguous(err)
		}
		// A refused or dropped connection, or no answer at all: the
		// receiver is not there, whatever the event.
		return broker.Result{Err: broker.MarkUnreachable(err)}
	}
	body := readSome(resp.Body)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return broker.Result{Receipt: herald.Receipt{MessageID: m.Event.ID}}
	}
	return broker.Result{Err: statusError(resp, body, p.cfg.Now())}
}

// request builds the unsigned POST, or a permanent error when no request
// could ever succeed (bad URL, payload too large, illegal header).
func (p *Publisher) request(m broker.Message) (*http.Request, error) {
	ev := m.Event
	if len(ev.Payload) > p.cfg.MaxPayload {
		return nil, fmt.Errorf("%w: webhook: event %s: payload is %d bytes, the limit (max_payload) is %d",
			herald.ErrPayloadTooLarge, ev.ID, len(ev.Payload), p.cfg.MaxPayload)
	}
	u, err := url.Parse(m.Destination)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("webhook: event %s: destination is not an http(s) URL", ev.ID)
	}
	req, err := http.NewRequest(http.MethodPost, u.String(), bytes.NewReader(ev.Payload))
	if err != nil {
		return nil, fmt.Errorf("webhook: event %s: %w", ev.ID, err)
	}
	contentType := "application/json"
	headers := broker.Headers(m, "ce-", p.cfg.Source)
	// HTTP folds header case: in sorted order, which of two user headers
	// differing only in case is sent does not depend on map order.
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		v := headers[k]
		if strings.EqualFold(k, "content-type") {
			contentType = v
			continue
		}
		if !validHeaderName(k) || !validHeaderValue(v) {
			return nil, fmt.Errorf("webhook: event %s: header %q cannot be sent over HTTP", ev.ID, k)
		}
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", p.cfg.UserAgent)
	return req, nil
}

// sign sets the Standard Webhooks headers; the timestamp is taken per try so
// a retry carries a fresh one (receivers reject old timestamps).
func (p *Publisher) sign(req *http.Request, m broker.Message) {
	ts := p.cfg.Now().Unix()
	req.Header.Set("webhook-id", m.Event.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", Sign(p.key, m.Event.ID, ts, m.Event.Payload))
}

// readSome drains and closes a response body, so the connection is reused,
// and returns its start for error messages.
func readSome(body io.ReadCloser) string {
	defer body.Close()
	b, _ := io.ReadAll(io.LimitReader(body, 64<<10))
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 1<<20))
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// redact drops userinfo and the query (they may hold credentials).
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	return c.String()
}

// validHeaderName reports whether k is an RFC 9110 token.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range []byte(k) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v has no control characters but tab.
func validHeaderValue(v string) bool {
	for _, c := range []byte(v) {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// hostLimits holds one semaphore per host, shared by all batches.
type hostLimits struct {
	max  int
	mu   sync.Mutex
	sems map[string]chan struct{}
}

// acquire takes a slot for host, or fails when ctx is done first.
func (h *hostLimits) acquire(ctx context.Context, host string) (release func(), err error) {
	h.mu.Lock()
	if h.sems == nil {
		h.sems = make(map[string]chan struct{})
	}
	sem, ok := h.sems[host]
	if !ok {
		sem = make(chan struct{}, h.max)
		h.sems[host] = sem
	}
	h.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}
