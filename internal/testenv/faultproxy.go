package testenv

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FaultProxy is a loopback HTTP reverse proxy in front of a test server
// of an HTTP API (an AWS emulator): Stop and Start make the server vanish
// and come back on the same address (connections refused, the ones open
// cut) without losing its data, and Inject makes it answer chosen calls
// with a canned error instead of forwarding them, as a throttling or
// refusing service would.
type FaultProxy struct {
	target *url.URL
	addr   string
	rp     *httputil.ReverseProxy

	mu       sync.Mutex
	srv      *http.Server
	faults   []*fault
	calls    map[string]int
	requests map[string]func([]byte) []byte
}

// Fault is a canned answer.
type Fault struct {
	Status      int
	ContentType string
	Body        string
	// Rewrite, when set, forwards the call and replaces the server's
	// answer body by Rewrite(request body, answer body); Status and Body
	// are then unused.
	Rewrite func(req, resp []byte) []byte
}

type fault struct {
	action string
	left   int
	f      Fault
}

// StartFaultProxy starts a proxy to target (http://host:port) on a free
// loopback port; it is stopped when the test ends.
func StartFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultProxy{target: u, addr: "127.0.0.1:0", calls: map[string]int{}}
	p.rp = httputil.NewSingleHostReverseProxy(u)
	p.rp.ModifyResponse = p.rewrite
	p.Start(t)
	t.Cleanup(func() { p.Stop(t) })
	return p
}

// URL is the proxy's http:// URL.
func (p *FaultProxy) URL() string { return "http://" + p.addr }

// Start listens again on the proxy's address.
func (p *FaultProxy) Start(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("fault proxy: listen %s: %v", p.addr, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.addr = ln.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 10 * time.Second}
	go func(srv *http.Server) { _ = srv.Serve(ln) }(p.srv)
}

// Stop closes the listener and every connection: calls are refused until
// Start. Stopping a stopped proxy does nothing.
func (p *FaultProxy) Stop(testing.TB) {
	p.mu.Lock()
	srv := p.srv
	p.srv = nil
	p.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Inject answers the next n calls of action (an X-Amz-Target's operation
// such as "SendMessageBatch", or a query protocol's Action) with f.
func (p *FaultProxy) Inject(action string, n int, f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, &fault{action: action, left: n, f: f})
}

// RewriteRequests has every later call of action forwarded with its body
// rewritten by fn (to work around an emulator's quirk the real service
// does not have).
func (p *FaultProxy) RewriteRequests(action string, fn func(body []byte) []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.requests == nil {
		p.requests = map[string]func([]byte) []byte{}
	}
	p.requests[action] = fn
}

// Calls returns how many calls of action reached the proxy.
func (p *FaultProxy) Calls(action string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[action]
}

// action reads the operation a call names, restoring its body.
func action(r *http.Request) (string, []byte) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		return target[strings.LastIndex(target, ".")+1:], body
	}
	if q, err := url.ParseQuery(string(body)); err == nil && q.Get("Action") != "" {
		return q.Get("Action"), body
	}
	return r.URL.Query().Get("Action"), body
}

// take returns the fault for a call of act, counting it down.
func (p *FaultProxy) take(act string) *Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[act]++
	for _, f := range p.faults {
		if f.action == act && f.left > 0 {
			f.left--
			return &f.f
		}
	}
	return nil
}

type reqBodyKey struct{}

func (p *FaultProxy) serve(w http.ResponseWriter, r *http.Request) {
	act, body := action(r)
	p.mu.Lock()
	rw := p.requests[act]
	p.mu.Unlock()
	if rw != nil {
		body = rw(body)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	f := p.take(act)
	switch {
	case f == nil:
		p.rp.ServeHTTP(w, r)
	case f.Rewrite != nil:
		p.rp.ServeHTTP(w, r.WithContext(withRewrite(r.Context(), body, f.Rewrite)))
	default:
		w.Header().Set("Content-Type", f.ContentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Body)))
		w.WriteHeader(f.Status)
		_, _ = io.WriteString(w, f.Body)
	}
}

// rewrite applies a Rewrite fault to the server's answer.
func (p *FaultProxy) rewrite(resp *http.Response) error {
	rw, ok := resp.Request.Context().Value(reqBodyKey{}).(*rewriteCall)
	if !ok {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	out := rw.fn(rw.req, body)
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	// The SDKs check a CRC32 of JSON answers when the server sends one.
	resp.Header.Del("X-Amz-Crc32")
	return nil
}

type rewriteCall struct {
	req []byte
	fn  func(req, resp []byte) []byte
}

func withRewrite(ctx context.Context, req []byte, fn func(req, resp []byte) []byte) context.Context {
	return context.WithValue(ctx, reqBodyKey{}, &rewriteCall{req: req, fn: fn})
}
