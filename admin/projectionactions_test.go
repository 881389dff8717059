package admin

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldhq/herald/store"
)

// Rule: the projection actions refuse an unknown projection (404, never
// "0 rows"), a caller without the admin token (401), and a rebuild whose
// confirm is not the projection's name (400), changing nothing.
func TestProjectionActionsRefuse(t *testing.T) {
	bg := context.Background()
	st := openStore(t)
	giftWall(t, st)
	stores := []StoreLanes{{Name: DefaultStore, Store: st, Projections: []ProjectionRef{{Name: "gift_wall"}}}}
	srv, err := ListenStores("127.0.0.1:0", prometheus.NewRegistry(), stores, WithToken("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(bg)
	post := func(path, token, body string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+srv.Addr()+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		path, token, body string
		want              int
	}{
		{"/api/projections/nosuch/rebuild", "s3cret", `{"confirm":"nosuch"}`, http.StatusNotFound},
		{"/api/projections/nosuch/replay", "s3cret", `{"all":true}`, http.StatusNotFound},
		{"/api/projections/gift_wall/rebuild", "", `{"confirm":"gift_wall"}`, http.StatusUnauthorized},
		{"/api/projections/gift_wall/rebuild", "s3cret", `{}`, http.StatusBadRequest},
		{"/api/projections/gift_wall/rebuild", "s3cret", `{"confirm":"gift"}`, http.StatusBadRequest},
		{"/api/projections/gift_wall/replay", "s3cret", `{}`, http.StatusBadRequest},
	} {
		if got := post(c.path, c.token, c.body); got != c.want {
			t.Errorf("POST %s %s (token %q): %d; want %d", c.path, c.body, c.token, got, c.want)
		}
	}
	stats, err := st.ProjectionStats(bg, store.DefaultProjectionTable, "gift_wall")
	if err != nil || len(stats) != 1 || stats[0].Done != 3 || stats[0].Dead != 2 {
		t.Errorf("refused actions changed the ledger: %+v (%v)", stats, err)
	}
}
