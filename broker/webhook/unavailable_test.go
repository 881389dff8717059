package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
)

// Rule: a 502/503/504 and a refused connection say the receiver is not
// there (unavailable: the relay pauses the lane); a 4xx is about the event
// (permanent) and a 500 an ordinary retry.
func TestUnavailableStatuses(t *testing.T) {
	cases := []struct {
		status             int
		unavailable, perma bool
	}{
		{http.StatusBadGateway, true, false},
		{http.StatusServiceUnavailable, true, false},
		{http.StatusGatewayTimeout, true, false},
		{http.StatusInternalServerError, false, false},
		{http.StatusRequestEntityTooLarge, false, true},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(c.status) }))
		p := newPublisher(t, Config{Secret: testSecret})
		res := p.Publish(context.Background(), []broker.Message{{Event: herald.Event{ID: "e1", Type: "T"}, Destination: srv.URL}})
		srv.Close()
		if err := res[0].Err; herald.IsUnavailable(err) != c.unavailable || herald.IsPermanent(err) != c.perma {
			t.Errorf("status %d: %v: unavailable %v, permanent %v; want %v, %v", c.status, err,
				herald.IsUnavailable(err), herald.IsPermanent(err), c.unavailable, c.perma)
		}
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // refused from now on
	p := newPublisher(t, Config{Secret: testSecret})
	res := p.Publish(context.Background(), []broker.Message{{Event: herald.Event{ID: "e2", Type: "T"}, Destination: url}})
	if !herald.IsUnavailable(res[0].Err) {
		t.Errorf("a refused connection: %v, want unavailable", res[0].Err)
	}
}
