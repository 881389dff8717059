package verify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/daemon"
	"github.com/heraldhq/herald/internal/faultproxy"
	"github.com/heraldhq/herald/projection"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
)

// verification is one run of verify: what it created and how to reach it.
type verification struct {
	o      Options
	stderr io.Writer
	// lane is the user's lane; scratch the children's copy of it, on the
	// scratch table and destination.
	lane, scratch config.Lane
	file          *config.File
	rt            *daemon.Runtime
	tgt           target
	// brokerProxies stand in front of the broker's addresses
	// (tgt.upstreams()), in their order.
	brokerProxies []*faultproxy.Proxy
	// dbProxy is nil when the store is a file (SQLite): no connection
	// to cut.
	dbProxy *faultproxy.Proxy
	faults  []string
	notes   []string
	dir     string
	relays  *relays
	// proj is the scratch projection, nil when no projection of the
	// config reads the lane.
	proj    *projCheck
	created []func(context.Context) error
}

// plan reads the config, refuses a lane verify cannot check, and creates
// the scratch table, destination and proxies.
func plan(ctx context.Context, o Options, stderr io.Writer) (*verification, error) {
	all, err := config.Load(o.ConfigPath, o.Drivers)
	if err != nil {
		return nil, err
	}
	lane, err := all.Lane(o.Lane)
	if err != nil {
		return nil, err
	}
	if lane.Source != relay.SourcePoll {
		return nil, invalidf("lanes (%s).source: %s: verify checks polling lanes only", lane.Name, lane.Source)
	}
	f, err := all.ForStore(lane.Store)
	if err != nil {
		return nil, err
	}
	v := &verification{o: o, stderr: stderr, lane: *lane, file: f}
	v.faults, _ = o.faults()
	if err := v.create(ctx, all); err != nil {
		v.cleanup(stderr)
		return nil, err
	}
	return v, nil
}

// create makes the scratch table, destination, proxies and child config,
// each registered for cleanup as soon as it exists.
func (v *verification) create(ctx context.Context, all *config.File) error {
	id := newID()
	dir, err := os.MkdirTemp("", "herald-verify-")
	if err != nil {
		return err
	}
	v.dir = dir
	tgt, err := openTarget(ctx, v.lane.Broker, all.Brokers[v.lane.Broker], scratch{id: id, dir: dir})
	if err != nil {
		return err
	}
	v.tgt = tgt
	if v.rt, err = daemon.OpenStore(ctx, v.file, false); err != nil {
		return err
	}
	table := "herald_verify_" + id
	v.created = append(v.created, func(ctx context.Context) error { return v.rt.Store.Drop(ctx, table) })
	if err := store.MigrateFor(ctx, v.rt.Store, table, v.lane.TableUse()); err != nil {
		return fmt.Errorf("verify: create the scratch table %s: %w", table, err)
	}
	for _, up := range tgt.upstreams() {
		p, err := faultproxy.Start(up)
		if err != nil {
			return err
		}
		v.brokerProxies = append(v.brokerProxies, p)
	}
	childDSN := v.file.Store.DSN
	if up, ok := dsnAddr(childDSN); ok {
		if v.dbProxy, err = faultproxy.Start(up); err != nil {
			return err
		}
		childDSN, _ = dsnVia(childDSN, v.dbProxy.Addr())
	} else {
		v.dropFaults(dbFault, "the store's DSN names no host:port (a file database) to put a proxy in front of")
	}
	v.scratch = scratchLane(v.lane, table, tgt)
	if p, ok := lanesProjection(all, v.lane); ok {
		v.proj = newProjCheck(p, table, tgt)
		if err := v.proj.create(ctx, v); err != nil {
			return err
		}
	}
	path, err := v.writeChildConfig(childDSN)
	if err != nil {
		return err
	}
	v.relays, err = newRelays(path, dir)
	return err
}

// dropFaults leaves out the faults of which when there is no connection
// to act on, saying why.
func (v *verification) dropFaults(which func(string) bool, why string) {
	var kept []string
	for _, f := range v.faults {
		if which(f) {
			v.notes = append(v.notes, fmt.Sprintf("%s skipped: %s", f, why))
			continue
		}
		kept = append(kept, f)
	}
	v.faults = kept
}

// scratchLane is the user's lane on the scratch table and destination,
// its other settings (ordering, batch, lease, retry…) kept.
func scratchLane(l config.Lane, table string, tgt target) config.Lane {
	l.Table, l.Broker, l.Store, l.Destination, l.Publisher = table, "verify", "", tgt.destination(), nil
	// A stale TTL deletes events on purpose; verify counts every one.
	l.DiscardAfter = 0
	return l
}

// writeChildConfig writes the children's config: the lane's store through
// the database proxy, the broker through the broker proxy, the scratch
// lane alone, no admin endpoint.
func (v *verification) writeChildConfig(dsn string) (string, error) {
	no := false
	st := v.file.Store
	st.DSN, st.Migrate = dsn, &no
	var via []string
	for _, p := range v.brokerProxies {
		via = append(via, p.Addr())
	}
	f := config.File{Store: st, Brokers: map[string]*config.Broker{"verify": v.tgt.childEntry(via)},
		Lanes: []config.Lane{v.scratch}, Admin: config.Admin{Addr: config.AdminOff}, Log: config.Log{Level: "warn"}}
	if v.proj != nil {
		f.Projections = []projection.Projection{v.proj.p}
	}
	b, err := yaml.Marshal(&f)
	if err != nil {
		return "", fmt.Errorf("verify: child config: %w", err)
	}
	path := filepath.Join(v.dir, "relay.yaml")
	return path, os.WriteFile(path, b, 0o600)
}

// cleanup removes what verify created (unless --keep) and stops what it
// started.
func (v *verification) cleanup(stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if v.relays != nil {
		v.relays.stop(10 * time.Second)
	}
	for _, p := range append(v.brokerProxies, v.dbProxy) {
		if p != nil {
			p.Close()
		}
	}
	if v.tgt != nil {
		if err := v.tgt.cleanup(ctx, v.o.Keep); err != nil {
			say(stderr, "remove %s: %v", v.tgt.describe(), err)
		}
	}
	if !v.o.Keep {
		for _, undo := range v.created {
			if err := undo(ctx); err != nil {
				say(stderr, "remove the scratch table: %v", err)
			}
		}
	}
	if v.rt != nil {
		v.rt.Close()
	}
	if v.o.Keep && v.tgt != nil {
		say(stderr, "kept the scratch table %s, %s, and the relays' config and logs in %s", v.scratch.Table, v.tgt.describe(), v.dir)
	} else if v.dir != "" {
		os.RemoveAll(v.dir)
	}
}

// newID is 8 random hex digits, lower case (a valid identifier tail for
// tables and subjects alike).
func newID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
