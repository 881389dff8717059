package giftwall

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/daemon"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/relay"
)

// DemoConfigYAML is the demo's config file when none is given: SQLite and
// an embedded NATS JetStream server in the working directory (the server
// on a free port picked at start, so it collides with neither `herald run`
// on 4233 nor a NATS server on 4222), and the three lanes. synchronous:
// normal trades power-loss durability of the last commits for speed: it is
// a demo.
const DemoConfigYAML = `
store: {driver: sqlite, dsn: giftwall.db, synchronous: normal}
brokers:
  events:
    type: nats
    stream: GIFTWALL
    subjects: ["giftwall.>"]
    create_stream: true
    embedded: {dir: giftwall-data, port: -1}
lanes:
  - name: wallet
    table: wallet_outbox
    destination: "giftwall.{tenant}.wallet.{event_type}"
    batch_size: 200
    poll_interval: 100ms
    retry: {initial: 50ms, max: 1s, max_attempts: 30}
  - name: room
    table: room_outbox
    destination: "giftwall.{tenant}.room.{event_type}"
    ordering: key
    batch_size: 200
    poll_interval: 100ms
    retry: {initial: 50ms, max: 1s, max_attempts: 30}
  - name: robot
    table: robot_outbox
    destination: "giftwall.{tenant}.robot.{event_type}"
    batch_size: 200
    poll_interval: 100ms
    discard_after: 2s
    retry: {initial: 200ms, max: 2s, max_attempts: 5}
    retention: {delivered: 1m, dead: 1h, interval: 10s}
`

// DemoConfig returns DemoConfigYAML parsed with d, the brokers and
// databases of the program (the herald binary's: package drivers); d must
// have the sqlite store and the nats broker.
func DemoConfig(d config.Drivers) (*config.File, error) {
	return config.Parse([]byte(DemoConfigYAML), "giftwall demo defaults", d)
}

// LaneNames are the lanes a demo config file must have: the wallet, room
// and robot lanes, each on its own table, the wallet lane on a nats broker
// or on one destination of a broker with a subscriber (sqs, kinesis).
var LaneNames = []string{"wallet", "room", "robot"}

// DemoOptions configures a Demo.
type DemoOptions struct {
	// File is the config file (store, broker, the lanes of LaneNames):
	// DemoConfig, DemoConfigFor or the program's own. Required.
	File *config.File
	// Traffic is the generated load; its Tenants default to DefaultTenants.
	Traffic TrafficConfig
	// FailRate fails this fraction of publishes (Flaky), to show retries.
	FailRate float64
	// LaunchDelay is the delay between a rocket's ignition and launch.
	// Defaults to 2s.
	LaunchDelay time.Duration
	// Logger receives Herald's logs. Defaults to slog.Default().
	Logger *slog.Logger
}

// Demo is the whole application running: the traffic generator, the relay
// with the three lanes, and the gift wall projector fed from the broker.
type Demo struct {
	opts    DemoOptions
	rt      *daemon.Runtime
	app     *App
	sub     broker.Subscriber
	flaky   []*Flaky
	counts  *laneCounts
	Traffic TrafficStats

	start    time.Time
	baseDone int64 // projection rows done or dead before this run
	baseGift int64 // ledger gifts before this run
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	genDone  chan struct{}
	genErr   error
	stopOnce sync.Once
	stopErr  error
}

// StartDemo opens the store, migrates, starts the brokers, the relay, the
// projector and the traffic, and returns at once. Stop ends it all.
func StartDemo(ctx context.Context, opts DemoOptions) (_ *Demo, err error) {
	if opts.File == nil {
		return nil, errors.New("giftwall: DemoOptions.File is required (DemoConfig)")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LaunchDelay <= 0 {
		opts.LaunchDelay = 2 * time.Second
	}
	if len(opts.Traffic.Tenants) == 0 {
		opts.Traffic.Tenants = DefaultTenants
	}
	lanes, err := demoLanes(opts.File)
	if err != nil {
		return nil, err
	}
	rt, err := daemon.OpenStore(ctx, opts.File, true)
	if err != nil {
		return nil, err
	}
	d := &Demo{opts: opts, rt: rt, counts: newLaneCounts(), genDone: make(chan struct{})}
	defer func() {
		if err != nil {
			rt.Close()
		}
	}()
	d.app, err = New(Config{Store: rt.Store, WalletTable: lanes[0].Table, RoomTable: lanes[1].Table,
		RobotTable: lanes[2].Table, LaunchDelay: opts.LaunchDelay})
	if err != nil {
		return nil, err
	}
	if err := d.prepare(ctx); err != nil {
		return nil, err
	}
	if err := rt.StartBrokers(ctx, opts.Logger); err != nil {
		return nil, err
	}
	r, p, err := d.build(ctx, lanes[0])
	if err != nil {
		return nil, err
	}
	d.run(r, p)
	return d, nil
}

// demoLanes finds the wallet, room and robot lanes of f.
func demoLanes(f *config.File) ([]*config.Lane, error) {
	out := make([]*config.Lane, len(LaneNames))
	for i, name := range LaneNames {
		l, err := f.Lane(name)
		if err != nil {
			return nil, fmt.Errorf("giftwall demo: the config needs lanes %v: %w", LaneNames, err)
		}
		out[i] = l
	}
	if walletNATS(f, out[0]) == nil && walletOpener(f, out[0]) == nil {
		return nil, fmt.Errorf("%w: giftwall demo: the wallet lane's broker %q must be one the gift wall can consume (nats, or a type with a subscriber: mqtt, pubsub, sqs, kinesis, …)",
			config.ErrInvalid, out[0].Broker)
	}
	return out, nil
}

// walletOpener is lane l's broker as a SubscriberOpener, or nil.
func walletOpener(f *config.File, l *config.Lane) broker.SubscriberOpener {
	if b := f.Brokers[l.Broker]; b != nil {
		if o, ok := b.Config.(broker.SubscriberOpener); ok {
			return o
		}
	}
	return nil
}

// walletNATS is the nats config of lane l's broker, or nil.
func walletNATS(f *config.File, l *config.Lane) *nats.BrokerConfig {
	if b := f.Brokers[l.Broker]; b != nil {
		if c, ok := b.Config.(*nats.BrokerConfig); ok {
			return c
		}
	}
	return nil
}

// prepare creates the tables, gives the users balances and takes the
// baselines that make the counters of this run.
func (d *Demo) prepare(ctx context.Context) error {
	if err := d.app.Migrate(ctx); err != nil {
		return err
	}
	if err := d.app.Seed(ctx, d.opts.Traffic.Tenants); err != nil {
		return err
	}
	st, err := d.projectionStats(ctx)
	if err != nil {
		return err
	}
	d.baseDone = st.Done + st.Dead
	rep, err := d.app.Verify(ctx)
	d.baseGift = rep.Gifts
	return err
}

// build makes the relay (lanes from the config, the rocket step attached,
// publishers wrapped in Flaky) and the projector with its subscriber.
func (d *Demo) build(ctx context.Context, wallet *config.Lane) (*relay.Relay, *projector.Projector, error) {
	lanes := d.app.WithHooks(d.rt.Lanes)
	if d.opts.FailRate > 0 {
		for i := range lanes {
			f, err := NewFlaky(lanes[i].Publisher, d.opts.FailRate)
			if err != nil {
				return nil, nil, err
			}
			d.flaky = append(d.flaky, f)
			lanes[i].Publisher = f
		}
	}
	r, err := relay.New(relay.Config{Store: d.rt.Store, Lanes: lanes, Node: d.rt.File.Node,
		Logger: d.opts.Logger, Observer: d.counts})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", config.ErrInvalid, err)
	}
	if d.sub, err = d.subscribe(ctx, wallet); err != nil {
		return nil, nil, err
	}
	p, err := d.app.NewProjector(d.opts.Logger)
	if err != nil {
		d.sub.Close()
		return nil, nil, err
	}
	return r, p, nil
}

// subscribe opens the gift wall's subscriber on the wallet lane's broker:
// a NATS durable consumer on the gift subjects, else the broker's own
// subscriber (group ProjectionName) on the wallet destination with "+"
// for the tenant (a whole MQTT level; a Pub/Sub destination must not
// depend on the tenant).
func (d *Demo) subscribe(ctx context.Context, wallet *config.Lane) (broker.Subscriber, error) {
	subjects, err := giftSubjects(wallet.Destination.String(), d.opts.Traffic.Tenants)
	if err != nil {
		return nil, err
	}
	if c := walletNATS(d.rt.File, wallet); c != nil {
		return nats.NewSubscriber(ctx, nats.SubscriberConfig{URL: d.rt.ClientURLs[wallet.Broker],
			Stream: c.Stream, Durable: ProjectionName,
			FilterSubjects: subjects, AckWait: 30 * time.Second,
			Name: "giftwall-projector"})
	}
	dest := wallet.Destination.Render(herald.Event{Tenant: "+", Topic: TopicWallet, Type: WalletGiftDebited})
	return walletOpener(d.rt.File, wallet).OpenSubscriber(ctx, broker.SubscribeRequest{Group: ProjectionName,
		Destination: dest, ClientURL: d.rt.ClientURLs[wallet.Broker], Logger: d.opts.Logger,
		DB: d.rt.Store.DB(), Dialect: d.rt.Store.Dialect()})
}

// giftSubjects renders the wallet lane's destination for WalletGiftDebited:
// the subjects the gift wall consumes. One subject with the tenant as a
// wildcard token when the template allows it (NATS servers before 2.10
// take one filter subject per consumer), else one per tenant.
func giftSubjects(destination string, tenants []string) ([]string, error) {
	t, err := broker.ParseTemplate(destination)
	if err != nil {
		return nil, err
	}
	render := func(tenant, key string) string {
		return t.Render(herald.Event{Tenant: tenant, Topic: TopicWallet, Type: WalletGiftDebited, PartitionKey: key})
	}
	if render("a", "x") != render("a", "y") {
		return nil, fmt.Errorf("%w: giftwall demo: the wallet lane's destination %q must not depend on {partition_key}",
			config.ErrInvalid, destination)
	}
	if wild := render("*", ""); wildcardTokens(wild) {
		return []string{wild}, nil
	}
	var out []string
	for _, tenant := range tenants {
		if s := render(tenant, ""); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// wildcardTokens reports whether every "*" in subject is a whole token.
func wildcardTokens(subject string) bool {
	for _, tok := range strings.Split(subject, ".") {
		if strings.Contains(tok, "*") && tok != "*" {
			return false
		}
	}
	return true
}

// run starts the relay, the projector and the traffic.
func (d *Demo) run(r *relay.Relay, p *projector.Projector) {
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	d.start = time.Now()
	d.wg.Go(func() {
		if err := r.Run(ctx); err != nil {
			d.opts.Logger.Error("relay stopped", "err", err)
		}
	})
	d.wg.Go(func() {
		if err := p.Run(ctx, d.sub); err != nil {
			d.opts.Logger.Error("projector stopped", "err", err)
		}
	})
	d.wg.Go(func() {
		defer close(d.genDone)
		if err := d.app.Generate(ctx, d.opts.Traffic, &d.Traffic); err != nil && ctx.Err() == nil {
			d.genErr = err
		}
	})
}

// App returns the running application.
func (d *Demo) App() *App { return d.app }

// Endpoints describes where the store and every broker are, for a banner.
func (d *Demo) Endpoints() []string {
	out := []string{"store: " + d.rt.File.Store.Driver + " " + config.Redact(d.rt.File.Store.DSN)}
	for _, name := range slices.Sorted(maps.Keys(d.rt.Endpoints)) {
		out = append(out, "broker "+name+": "+d.rt.Endpoints[name])
	}
	return out
}

// GenerationDone is closed when the traffic has stopped (its gift target
// reached, or Stop). GenerationErr tells why, if it failed.
func (d *Demo) GenerationDone() <-chan struct{} { return d.genDone }

// GenerationErr is the traffic generator's failure, if any, once
// GenerationDone is closed.
func (d *Demo) GenerationErr() error { return d.genErr }

// Stop ends the traffic, the relay and the projector (gracefully: nothing
// in flight is lost), then closes the subscriber, the brokers and the
// store. It is safe to call more than once.
func (d *Demo) Stop() error {
	d.stopOnce.Do(func() {
		d.cancel()
		d.wg.Wait()
		d.stopErr = errors.Join(d.sub.Close(), d.rt.Close())
	})
	return d.stopErr
}

// Verify compares the gift wall with the wallet ledger.
func (d *Demo) Verify(ctx context.Context) (Report, error) { return d.app.Verify(ctx) }

// String names the demo's tenants, for a banner.
func (d *Demo) String() string {
	return "tenants " + strings.Join(d.opts.Traffic.Tenants, ", ")
}
