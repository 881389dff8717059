package verify

import (
	"net/url"
	"strings"
)

// serverURL parses a broker URL (the first of a comma-separated list: a
// cluster's, of which verify reaches the first) and checks it names a
// host:port, which the proxy needs.
func serverURL(what, raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(strings.Split(raw, ",")[0]))
	if err != nil || u.Host == "" || u.Port() == "" {
		return nil, invalidf("%s url %q: verify needs host:port to put its proxy in front", what, redactURL(raw))
	}
	return u, nil
}

// viaURL is u reaching addr instead of its host.
func viaURL(u *url.URL, addr string) string {
	c := *u
	c.Host = addr
	return c.String()
}
