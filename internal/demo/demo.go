// Package demo is `herald demo`: the gift wall reference application
// (examples/giftwall) with generated traffic and a live view. It is a
// command cmd/herald adds to the CLI (cli.Main's extra), so that package
// cli links no example.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/examples/giftwall"
	"github.com/heraldhq/herald/internal/terminal"
)

// demoFlags are `herald demo`'s options.
type demoFlags struct {
	gifts       int64
	exit        bool
	rate        float64
	failRate    float64
	launchDelay time.Duration
	stall       time.Duration
	broker      string
}

// Env is what the command takes from the CLI (cli.Env has it all).
type Env interface {
	Stdout() io.Writer
	Stderr() io.Writer
	ConfigPath() string
	LogLevel() string
	Drivers() config.Drivers
	LoadConfig() (*config.File, error)
	Logger(f *config.File) (*slog.Logger, error)
	Usagef(format string, args ...any) error
}

// app runs the command with the CLI's Env.
type app struct{ Env }

// Command returns `herald demo`.
func Command(env Env) *cobra.Command {
	a := &app{env}
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the gift wall reference application (wallet, rooms, robots, projection) with generated traffic",
		Long: "Runs examples/giftwall in the working directory: SQLite (giftwall.db) and an embedded NATS JetStream " +
			"server (data in giftwall-data/, on a free loopback port, printed at start), the wallet, room and robot " +
			"lanes, and the gift wall projector fed from NATS, with wallet and room traffic at --rate events/s and a " +
			"live view. --config FILE runs it on the store and broker of FILE instead (it needs lanes wallet, room " +
			"and robot; see examples/giftwall/README.md); herald.yaml is not read. With --gifts N --exit it stops " +
			"after N gifts, waits until everything is delivered and projected, checks the gift wall against the " +
			"wallet ledger and exits 0 only if they match.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.demo(cmd.Context(), f) },
	}
	cmd.Flags().Int64Var(&f.gifts, "gifts", 0, "stop generating after N gifts (0: run until interrupted)")
	cmd.Flags().BoolVar(&f.exit, "exit", false, "with --gifts: wait until all is delivered and projected, verify, exit")
	cmd.Flags().Float64Var(&f.rate, "rate", 200, "events enqueued per second (0: as fast as the database allows)")
	cmd.Flags().Float64Var(&f.failRate, "fail-rate", 0, "fraction of publishes the broker fails (0 to 1), to show retries")
	cmd.Flags().DurationVar(&f.launchDelay, "launch-delay", 2*time.Second, "delay between a rocket's ignition and its launch")
	cmd.Flags().DurationVar(&f.stall, "stall-timeout", time.Minute, "with --exit: give up when nothing moves for this long")
	cmd.Flags().StringVar(&f.broker, "broker", "nats", "the broker: "+strings.Join(giftwall.DemoBrokers(), ", ")+
		" (examples/giftwall/NAME.yaml; nats is an embedded server)")
	return cmd
}

func (f demoFlags) validate(usagef func(string, ...any) error) error {
	switch {
	case f.gifts < 0:
		return usagef("--gifts %d is negative", f.gifts)
	case f.exit && f.gifts == 0:
		return usagef("--exit needs --gifts N")
	case f.rate < 0:
		return usagef("--rate %v is negative", f.rate)
	case f.failRate < 0 || f.failRate >= 1:
		return usagef("--fail-rate %v is not in [0, 1)", f.failRate)
	case f.launchDelay <= 0:
		return usagef("--launch-delay must be positive")
	case !slices.Contains(giftwall.DemoBrokers(), f.broker):
		return usagef("--broker %q: the demo runs on %s", f.broker, strings.Join(giftwall.DemoBrokers(), ", "))
	}
	return nil
}

func (a *app) demo(ctx context.Context, f demoFlags) error {
	if err := f.validate(a.Usagef); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	file, err := giftwall.DemoConfigFor(f.broker, a.Drivers())
	if err != nil {
		return err
	}
	if a.ConfigPath() != "" {
		if file, err = a.LoadConfig(); err != nil {
			return err
		}
	}
	log, err := a.demoLogger(file)
	if err != nil {
		return err
	}
	d, err := giftwall.StartDemo(ctx, giftwall.DemoOptions{File: file, FailRate: f.failRate,
		LaunchDelay: f.launchDelay, Logger: log,
		Traffic: giftwall.TrafficConfig{Rate: f.rate, Gifts: f.gifts}})
	if err != nil {
		return err
	}
	defer d.Stop()
	for _, e := range d.Endpoints() {
		fmt.Fprintf(a.Stdout(), "herald demo: %s\n", e)
	}
	v := newDemoView(a.Stdout(), f)
	if err := a.demoWatch(ctx, d, v); err != nil || !f.exit {
		return err
	}
	return a.demoVerify(ctx, d, v, f)
}

// demoLogger logs at error level unless asked otherwise: retries are the
// point of --fail-rate, and the live view shows them.
func (a *app) demoLogger(f *config.File) (*slog.Logger, error) {
	if a.LogLevel() == "" && f.Log.Level == "" {
		return slog.New(slog.NewTextHandler(a.Stderr(), &slog.HandlerOptions{Level: slog.LevelError})), nil
	}
	return a.Logger(f)
}

// demoWatch shows the live view until the traffic stops (with --exit) or
// the user interrupts.
func (a *app) demoWatch(ctx context.Context, d *giftwall.Demo, v *demoView) error {
	tick := time.NewTicker(v.every)
	defer tick.Stop()
	gen := d.GenerationDone()
	for {
		select {
		case <-ctx.Done():
			s, _ := d.Snapshot(context.WithoutCancel(ctx))
			v.draw(s, true)
			return nil
		case <-gen:
			if err := d.GenerationErr(); err != nil {
				return fmt.Errorf("traffic: %w", err)
			}
			if v.flags.exit {
				return nil
			}
			gen = nil // keep showing the relay and projector at work
		case <-tick.C:
		}
		s, err := d.Snapshot(ctx)
		if err != nil && ctx.Err() == nil {
			return err
		}
		v.draw(s, false)
	}
}

// errMismatch makes `herald demo --exit` fail when the wall differs.
var errMismatch = errors.New("the gift wall does not match the wallet ledger")

// demoVerify waits until all is delivered and projected, then compares
// the gift wall with the ledger and prints the verdict.
func (a *app) demoVerify(ctx context.Context, d *giftwall.Demo, v *demoView, f demoFlags) error {
	last := time.Now()
	s, err := d.Settle(ctx, f.stall, func(s giftwall.Snapshot) {
		if time.Since(last) >= v.every {
			v.draw(s, false)
			last = time.Now()
		}
	})
	v.draw(s, true)
	if err != nil {
		return err
	}
	rep, err := d.Verify(ctx)
	if err != nil {
		return err
	}
	if rep.Gifts > s.Gifts && s.Gifts == f.gifts {
		// A database used before: say how many of the gifts are this run's.
		fmt.Fprintf(a.Stdout(), "herald demo: the ledger holds %d gifts, %d of them from this run\n", rep.Gifts, s.Gifts)
	}
	fmt.Fprintln(a.Stdout(), rep.String())
	if !rep.OK() {
		return errMismatch
	}
	return nil
}

// demoView draws snapshots: redrawn in place on a terminal, one plain line
// per second otherwise.
type demoView struct {
	out       io.Writer
	flags     demoFlags
	terminal  bool
	every     time.Duration
	lines     int // lines drawn last time (terminal)
	prev      giftwall.Snapshot
	lastPlain time.Time
}

func newDemoView(out io.Writer, f demoFlags) *demoView {
	v := &demoView{out: out, flags: f, terminal: terminal.Is(out), every: time.Second}
	if v.terminal {
		v.every = 250 * time.Millisecond
	}
	return v
}

func (v *demoView) draw(s giftwall.Snapshot, final bool) {
	rates := v.rates(s)
	v.prev = s
	if !v.terminal {
		if final || time.Since(v.lastPlain) >= v.every*9/10 {
			fmt.Fprintln(v.out, plainLine(s, rates))
			v.lastPlain = time.Now()
		}
		return
	}
	lines := viewLines(s, rates, v.flags)
	var b strings.Builder
	if v.lines > 0 {
		fmt.Fprintf(&b, "\x1b[%dF\x1b[J", v.lines) // back to the view's first line, clear below
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	v.lines = len(lines)
	io.WriteString(v.out, b.String())
}

// rates are per-second rates since the previous snapshot.
type rates struct{ enqueued, published, projected float64 }

func (v *demoView) rates(s giftwall.Snapshot) rates {
	dt := (s.Elapsed - v.prev.Elapsed).Seconds()
	if dt <= 0 {
		return rates{}
	}
	return rates{enqueued: float64(s.Events-v.prev.Events) / dt, published: float64(s.Delivered-v.prev.Delivered) / dt,
		projected: float64(s.Projected-v.prev.Projected) / dt}
}

func plainLine(s giftwall.Snapshot, r rates) string {
	backlog, lag := int64(0), time.Duration(0)
	for _, l := range s.Lanes {
		backlog += l.Backlog
		lag = max(lag, l.Lag)
	}
	return fmt.Sprintf("t=%.1fs gifts=%d%s events=%d enqueued/s=%.0f published=%d published/s=%.0f backlog=%d lag=%s retries=%d dead=%d discarded=%d projected=%d wall_lag=%d",
		s.Elapsed.Seconds(), s.Gifts, target(s), s.Events, r.enqueued, s.Delivered, r.published, backlog,
		lag.Round(time.Millisecond), s.Retried, s.Dead, s.Discarded, s.Projected, s.ProjectionLag)
}

func target(s giftwall.Snapshot) string {
	if s.GiftsTarget == 0 {
		return ""
	}
	return fmt.Sprintf("/%d", s.GiftsTarget)
}

func viewLines(s giftwall.Snapshot, r rates, f demoFlags) []string {
	out := []string{fmt.Sprintf("herald demo · %s · %s", s.Elapsed.Round(100*time.Millisecond), status(s))}
	if s.GiftsTarget > 0 {
		out = append(out, fmt.Sprintf("gifts      %s %d/%d", bar(s.Gifts, s.GiftsTarget, 30), s.Gifts, s.GiftsTarget))
	} else {
		out = append(out, fmt.Sprintf("gifts      %d", s.Gifts))
	}
	out = append(out,
		fmt.Sprintf("wallet     refused %d (insufficient balance) · duplicates %d (same command id) · rockets %d", s.Refused, s.Duplicates, s.Rockets),
		fmt.Sprintf("rates      enqueued %6.0f ev/s · published %6.0f ev/s · projected %6.0f gifts/s", r.enqueued, r.published, r.projected),
		"lane       backlog       lag   delivered   retries  dead  discarded")
	for _, l := range s.Lanes {
		out = append(out, fmt.Sprintf("%-10s %7d %9s %11d %9d %5d %10d", l.Name, l.Backlog, l.Lag.Round(time.Millisecond),
			l.Delivered, l.Retried, l.Dead, l.Discarded))
	}
	out = append(out, fmt.Sprintf("gift wall  projected %d · lag %d · failed %d · dead %d", s.Projected, s.ProjectionLag,
		s.ProjectionFailed, s.ProjectionDead))
	if f.failRate > 0 {
		out = append(out, fmt.Sprintf("broker     %d publishes failed on purpose (--fail-rate %.2f)", s.Injected, f.failRate))
	}
	return out
}

func status(s giftwall.Snapshot) string {
	if s.Generating {
		return "generating"
	}
	if s.Settled() {
		return "all delivered and projected"
	}
	return "draining"
}

// bar is a progress bar of width cells.
func bar(done, total int64, width int) string {
	n := int(min(done, total) * int64(width) / max(total, 1))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}
