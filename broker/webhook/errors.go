package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald"
)

// ErrClosed is returned for messages published after Close.
var ErrClosed = errors.New("webhook: publisher is closed")

// HTTPError is a non-2xx answer from a webhook receiver.
//
// 408, 429 and 5xx come back as a plain (retryable) *HTTPError, 502, 503
// and 504 wrapped in herald.Unavailable (the receiver is not there: the
// relay pauses the lane instead of spending attempts); any other status
// comes back wrapped in herald.Permanent. RetryAfter is the
// receiver's Retry-After (seconds or an HTTP date), zero when it sent none:
// the relay should not retry the event before that. Code outside this
// package that must not import it can read the delay through the
// RetryDelay method: errors.As(err, &x) with
// x of type interface{ RetryDelay() time.Duration }.
type HTTPError struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// RetryAfter is how long the receiver asked us to wait; 0 if unsaid.
	RetryAfter time.Duration
	// Body is the start of the answer's body, for the operator.
	Body string
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("webhook: receiver answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// RetryDelay returns RetryAfter; see HTTPError.
func (e *HTTPError) RetryDelay() time.Duration { return e.RetryAfter }

// retryableStatus reports whether a status is worth a retry: the receiver
// timed out, throttled us or failed on its side.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// gatewayStatus reports whether a status says the receiver is not there
// (a proxy in front of it found no upstream, or it is overloaded or down
// for maintenance), rather than anything about the event.
func gatewayStatus(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// statusError classifies a non-2xx answer.
func statusError(resp *http.Response, body string, now time.Time) error {
	e := &HTTPError{StatusCode: resp.StatusCode, Body: body}
	if !retryableStatus(resp.StatusCode) {
		return herald.Permanent(e)
	}
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
	if gatewayStatus(resp.StatusCode) {
		return herald.Unavailable(e)
	}
	return e
}

// maxRetryAfter bounds a receiver's Retry-After so that a bogus value cannot
// park an event for years; the relay's own backoff max applies too.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads delay-seconds or an HTTP date; 0 when absent or bad.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		d = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = at.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}
