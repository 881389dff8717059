package verify

import (
	"net"
	"net/url"
	"regexp"
	"strings"
)

// The three shapes a networked DSN takes: a URL (scheme://user@host:port/db),
// Go's MySQL driver's tcp(host:port), and libpq's keywords (host=… port=…).
// verify reads the server's address from them to put its proxy in front,
// without asking which database it is.
var (
	tcpAddr  = regexp.MustCompile(`tcp\(([^)]*)\)`)
	kwHost   = regexp.MustCompile(`(^|\s)host=(\S+)`)
	kwPort   = regexp.MustCompile(`(^|\s)port=(\d+)`)
	urlShape = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*://`)
)

// dsnAddr returns the host:port a DSN connects to, or false when it names
// none (a file database, or a default port left implicit).
func dsnAddr(dsn string) (string, bool) {
	switch {
	case urlShape.MatchString(dsn):
		u, err := url.Parse(dsn)
		if err != nil || u.Port() == "" || strings.Contains(u.Host, ",") {
			return "", false
		}
		return u.Host, true
	case tcpAddr.MatchString(dsn):
		addr := tcpAddr.FindStringSubmatch(dsn)[1]
		if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
			return "", false
		}
		return addr, true
	case kwHost.MatchString(dsn) && kwPort.MatchString(dsn):
		host := kwHost.FindStringSubmatch(dsn)[2]
		if strings.HasPrefix(host, "/") {
			return "", false // a Unix socket directory
		}
		return net.JoinHostPort(host, kwPort.FindStringSubmatch(dsn)[2]), true
	}
	return "", false
}

// dsnVia returns dsn connecting to addr (the proxy) instead.
func dsnVia(dsn, addr string) (string, bool) {
	if _, ok := dsnAddr(dsn); !ok {
		return dsn, false
	}
	host, port, _ := net.SplitHostPort(addr)
	switch {
	case urlShape.MatchString(dsn):
		u, _ := url.Parse(dsn)
		u.Host = addr
		return u.String(), true
	case tcpAddr.MatchString(dsn):
		return tcpAddr.ReplaceAllLiteralString(dsn, "tcp("+addr+")"), true
	default:
		dsn = kwHost.ReplaceAllString(dsn, "${1}host="+host)
		return kwPort.ReplaceAllString(dsn, "${1}port="+port), true
	}
}
