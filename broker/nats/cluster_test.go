package nats_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldhq/herald/internal/testenv"
)

// cluster is three JetStream servers on loopback, routed to each other,
// each with its own client port, cluster port and store directory, so that
// a node can be stopped and started again as itself.
type cluster struct {
	t     *testing.T
	opts  []*server.Options
	nodes []*server.Server // nil while a node is down
}

// startCluster starts three nodes and waits until JetStream has a meta
// leader (the cluster accepts stream creation).
func startCluster(t *testing.T) *cluster {
	t.Helper()
	const n = 3
	client, peer, routes := make([]int, n), make([]int, n), make([]string, n)
	for i := range n {
		client[i], peer[i] = freePort(t), freePort(t)
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", peer[i])
	}
	c := &cluster{t: t, nodes: make([]*server.Server, n)}
	for i := range n {
		c.opts = append(c.opts, &server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       client[i],
			JetStream:  true,
			StoreDir:   t.TempDir(),
			Cluster:    server.ClusterOpts{Name: "herald-test", Host: "127.0.0.1", Port: peer[i]},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
			NoSigs:     true,
			NoLog:      true,
		})
	}
	for i := range n {
		c.start(i)
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	c.waitMeta()
	return c
}

// urls lists every node's client URL: what a client is configured with.
func (c *cluster) urls() string {
	var us []string
	for _, o := range c.opts {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", o.Port))
	}
	return strings.Join(us, ",")
}

// start starts node i on its own ports and directory.
func (c *cluster) start(i int) {
	c.t.Helper()
	o := *c.opts[i]
	ns, err := server.NewServer(&o)
	if err != nil {
		c.t.Fatalf("node %d: %v", i, err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		c.t.Fatalf("node %d not ready on port %d", i, o.Port)
	}
	c.nodes[i] = ns
}

// stop shuts node i down (its clients are cut off, its routes dropped) and
// waits until its port is free. A stopped node stays stopped.
func (c *cluster) stop(i int) {
	if ns := c.nodes[i]; ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		c.nodes[i] = nil
	}
}

// index returns the node named name.
func (c *cluster) index(name string) int {
	c.t.Helper()
	for i, o := range c.opts {
		if o.ServerName == name {
			return i
		}
	}
	c.t.Fatalf("no node named %q", name)
	return -1
}

// waitMeta waits until the cluster answers JetStream account requests,
// which needs an elected meta leader.
func (c *cluster) waitMeta() {
	c.t.Helper()
	nc, js := c.connect()
	defer nc.Close()
	waitUntil(c.t, 30*time.Second, "JetStream meta leader", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err == nil
	})
}

// connect opens a plain client on every node's URL.
func (c *cluster) connect() (*natsgo.Conn, jetstream.JetStream) {
	c.t.Helper()
	nc, err := natsgo.Connect(c.urls(), natsgo.MaxReconnects(-1), natsgo.ReconnectWait(100*time.Millisecond))
	if err != nil {
		c.t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		c.t.Fatal(err)
	}
	return nc, js
}

// streamLeader returns the index of stream's leader, once there is one.
func (c *cluster) streamLeader(js jetstream.JetStream, stream string) int {
	c.t.Helper()
	leader := ""
	waitUntil(c.t, 30*time.Second, "a leader for stream "+stream, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return false
		}
		info := s.CachedInfo()
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return false
		}
		leader = info.Cluster.Leader
		return true
	})
	return c.index(leader)
}

// waitUntil waits for state another goroutine or server changes, for
// which there is no signal to wait on.
func waitUntil(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, within, 20*time.Millisecond, what, cond)
}
