package verify

import "testing"

func TestDSNAddrAndVia(t *testing.T) {
	for _, tc := range []struct{ dsn, addr, via string }{
		{"postgres://u:p@db.example:5432/test?sslmode=disable", "db.example:5432", "postgres://u:p@127.0.0.1:9/test?sslmode=disable"},
		{"root@tcp(127.0.0.1:3306)/test?parseTime=true", "127.0.0.1:3306", "root@tcp(127.0.0.1:9)/test?parseTime=true"},
		{"host=db port=5433 user=x dbname=test", "db:5433", "host=127.0.0.1 port=9 user=x dbname=test"},
		{"herald.db", "", "herald.db"},
		{"file:herald.db?_pragma=busy_timeout(5000)", "", "file:herald.db?_pragma=busy_timeout(5000)"},
		{"postgres://u@db/test", "", "postgres://u@db/test"},
		{"host=/var/run/postgresql port=5432", "", "host=/var/run/postgresql port=5432"},
	} {
		addr, ok := dsnAddr(tc.dsn)
		if addr != tc.addr || ok != (tc.addr != "") {
			t.Errorf("dsnAddr(%q) = %q, %v; want %q", tc.dsn, addr, ok, tc.addr)
		}
		if via, _ := dsnVia(tc.dsn, "127.0.0.1:9"); via != tc.via {
			t.Errorf("dsnVia(%q) = %q; want %q", tc.dsn, via, tc.via)
		}
	}
}
