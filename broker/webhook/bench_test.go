package webhook

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/heraldhq/herald/internal/benchpub"
)

// BenchmarkPublish measures batch throughput against a loopback receiver
// that reads the body and answers 204 (signature checks are the
// receiver's cost, left out). 16 keys, MaxPerHost 16.
func BenchmarkPublish(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprint("batch=", size), func(b *testing.B) {
			p := newPublisher(b, Config{MaxPerHost: 16})
			benchpub.Publish(b, p, size, func(int) string { return srv.URL + "/hook" })
		})
	}
}
