package webhook

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/heraldhq/herald/broker"
)

// PingDestination opens (and closes) a TCP connection to the receiver that
// dest names, so that a receiver down from the start shows as down before
// any event comes, and a down one is probed without spending an event. It
// sends no request: a receiver must not see traffic that is not an event.
// It returns nil when the host depends on the event ({tenant}.example.com)
// or the URL does not parse (publishing reports that). It implements
// broker.DestinationPinger.
func (p *Publisher) PingDestination(ctx context.Context, dest broker.Template) error {
	addr, ok := pingAddr(dest)
	if !ok {
		return nil
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return broker.MarkUnreachable(fmt.Errorf("webhook: %s: %w", addr, err))
	}
	return conn.Close()
}

// pingAddr is host:port of dest when its scheme and host are literal.
func pingAddr(dest broker.Template) (string, bool) {
	prefix := dest.LiteralPrefix()
	scheme, rest, ok := strings.Cut(prefix, "://")
	if !ok || (dest.HasPlaceholders() && !strings.Contains(rest, "/")) {
		return "", false // the host itself may hold a placeholder
	}
	u, err := url.Parse(prefix)
	if err != nil || u.Hostname() == "" {
		return "", false
	}
	port := u.Port()
	switch {
	case port != "":
	case scheme == "https":
		port = "443"
	default:
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port), true
}
