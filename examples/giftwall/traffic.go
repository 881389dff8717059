package giftwall

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// DefaultTenants are the demo's two tenants (app codes).
var DefaultTenants = []string{"aurora", "nebula"}

// Gift is one entry of the gift catalogue.
type Gift struct {
	ID    string
	Price int64
	// Rocket gifts ignite a rocket in the room.
	Rocket bool
}

// Catalogue is the gifts the traffic generator sends.
var Catalogue = []Gift{{"rose", 1, false}, {"heart", 5, false}, {"crown", 50, false}, {"rocket", 200, true}}

const (
	users       = 40
	rooms       = 6
	robots      = 3
	richBalance = 1_000_000_000
	// brokeUser has almost nothing: the gifts it tries show refusals.
	brokeUser    = "u00"
	brokeBalance = 30
)

// TrafficConfig configures Generate.
type TrafficConfig struct {
	// Tenants to generate for, in turn. Defaults to DefaultTenants.
	Tenants []string
	// Rate is the target of events enqueued per second (0: as fast as the
	// database allows).
	Rate float64
	// Gifts stops the traffic after this many gifts were paid (0: run
	// until ctx ends).
	Gifts int64
	// Seed makes a run repeatable. Zero picks one at random.
	Seed uint64
}

// TrafficStats counts what Generate did; read it while it runs.
type TrafficStats struct {
	// Gifts paid, Refused for insufficient balance, Duplicates: commands
	// sent again and recognised (no second debit, no second event).
	Gifts, Refused, Duplicates atomic.Int64
	// Events enqueued, Rockets ignited, Errors (failed transactions).
	Events, Rockets, Errors atomic.Int64
}

// Seed gives every demo user of tenants a balance: large for most, tiny
// for one (whose gifts are refused).
func (a *App) Seed(ctx context.Context, tenants []string) error {
	for _, t := range tenants {
		for u := range users + 1 {
			amount := int64(richBalance)
			if u == 0 {
				amount = brokeBalance
			}
			if err := a.Wallet.Credit(ctx, t, userName(u), DefaultAsset, amount); err != nil {
				return err
			}
		}
	}
	return nil
}

func userName(i int) string { return fmt.Sprintf("u%02d", i) }

// Generate runs the demo traffic until cfg.Gifts gifts are paid or ctx
// ends: gifts (the wallet debit, then the room's broadcast, and a rocket
// for rocket gifts), room entries and exits, and robot gift shows, spread
// over the tenants, paced to cfg.Rate events per second. It returns nil
// when the gifts are done, ctx's error otherwise.
func (a *App) Generate(ctx context.Context, cfg TrafficConfig, st *TrafficStats) error {
	if len(cfg.Tenants) == 0 {
		cfg.Tenants = DefaultTenants
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	g := &generator{app: a, cfg: cfg, st: st, rnd: rand.New(rand.NewPCG(seed, seed>>1)), inRoom: map[string]bool{}}
	start := time.Now()
	for i := 0; cfg.Gifts == 0 || st.Gifts.Load() < cfg.Gifts; i++ {
		if cfg.Rate > 0 {
			due := start.Add(time.Duration(float64(st.Events.Load()) / cfg.Rate * float64(time.Second)))
			if !waitUntil(ctx, due) {
				return ctx.Err()
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := g.step(ctx, cfg.Tenants[i%len(cfg.Tenants)])
		st.Events.Add(int64(n))
		if err != nil && ctx.Err() == nil {
			st.Errors.Add(1)
		}
	}
	return nil
}

// waitUntil waits until t or until ctx ends, reporting whether t came.
// (The example imports no internal package, so it can be copied out.)
func waitUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// generator is one run's random choices and room membership.
type generator struct {
	app    *App
	cfg    TrafficConfig
	st     *TrafficStats
	rnd    *rand.Rand
	inRoom map[string]bool
	last   *GiftDebit
}

// step does one random action for tenant and returns the events it enqueued.
func (g *generator) step(ctx context.Context, tenant string) (int, error) {
	switch r := g.rnd.IntN(100); {
	case r < 50:
		return g.gift(ctx, tenant)
	case r < 70:
		return g.moveUser(ctx, tenant)
	default:
		room, robot, gift := g.room(), fmt.Sprintf("bot%d", 1+g.rnd.IntN(robots)), Catalogue[g.rnd.IntN(len(Catalogue)-1)]
		if err := g.app.Robots.Show(ctx, tenant, room, robot, gift.ID); err != nil {
			return 0, err
		}
		return 1, nil
	}
}

func (g *generator) room() string { return fmt.Sprintf("r%d", 1+g.rnd.IntN(rooms)) }

// gift pays for a gift and broadcasts it in a room; sometimes it repeats
// the previous command instead, which the wallet must recognise.
func (g *generator) gift(ctx context.Context, tenant string) (int, error) {
	if g.last != nil && g.rnd.IntN(100) < 5 {
		d := *g.last
		g.last = nil
		res, err := g.app.Wallet.DebitGift(ctx, d)
		if err == nil && res.Duplicate {
			g.st.Duplicates.Add(1)
		}
		return 0, err
	}
	d := g.newDebit(tenant)
	if _, err := g.app.Wallet.DebitGift(ctx, d); err != nil {
		if errors.Is(err, ErrInsufficientBalance) {
			g.st.Refused.Add(1)
			return 0, nil
		}
		return 0, err
	}
	g.last = &d
	g.st.Gifts.Add(1)
	room := g.room()
	if err := g.app.Rooms.BroadcastGift(ctx, room, d); err != nil {
		return 1, err
	}
	if d.GiftID != "rocket" {
		return 2, nil
	}
	if _, err := g.app.Rooms.IgniteRocket(ctx, tenant, room, d.Sender); err != nil {
		return 2, err
	}
	g.st.Rockets.Add(1)
	return 3, nil
}

func (g *generator) newDebit(tenant string) GiftDebit {
	sender := 1 + g.rnd.IntN(users)
	if g.rnd.IntN(100) < 3 {
		sender = 0
	}
	receiver := 1 + g.rnd.IntN(users)
	if receiver == sender {
		receiver = 1 + receiver%users
	}
	gift := Catalogue[g.rnd.IntN(len(Catalogue)-1)]
	if g.rnd.IntN(100) < 4 {
		gift = Catalogue[len(Catalogue)-1]
	}
	return GiftDebit{CommandID: fmt.Sprintf("cmd-%016x", g.rnd.Uint64()), Tenant: tenant,
		Sender: userName(sender), Receiver: userName(receiver), GiftID: gift.ID,
		Count: 1 + int64(g.rnd.IntN(3)), UnitPrice: gift.Price}
}

// moveUser takes a user into a room or out of it.
func (g *generator) moveUser(ctx context.Context, tenant string) (int, error) {
	room, user := g.room(), userName(1+g.rnd.IntN(users))
	key := tenant + "/" + room + "/" + user
	var err error
	if g.inRoom[key] {
		err = g.app.Rooms.Leave(ctx, tenant, room, user)
	} else {
		err = g.app.Rooms.Enter(ctx, tenant, room, user)
	}
	if err != nil {
		return 0, err
	}
	g.inRoom[key] = !g.inRoom[key]
	return 1, nil
}
