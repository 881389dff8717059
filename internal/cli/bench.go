package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/daemon"
	"github.com/heraldhq/herald/internal/bench"
	"github.com/heraldhq/herald/relay"
)

type benchFlags struct {
	lane, producer, cpuProfile, source string
	onDelivered, write                 string
	events, batch, workers, payload    int
	producers, txSize                  int
	brokerDelay                        time.Duration
	runs, rate                         int
	duration                           time.Duration
	asJSON                             bool
}

func (a *app) benchCommand() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the relay on the configured store and broker (table " + bench.Table + ", emptied first)",
	}
	cmd.PersistentFlags().StringVar(&f.lane, "lane", "", "lane whose store and broker to use (default: the first lane)")
	cmd.PersistentFlags().BoolVar(&f.asJSON, "json", false, "print JSON")
	tp := &cobra.Command{Use: "throughput", Short: "events/s to the broker beside the store's own limit (a no-op publisher), medians of --runs",
		Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error { return a.benchThroughput(cmd.Context(), f) }}
	tp.Flags().IntVar(&f.events, "events", 20000, "events per run")
	laneFlags(tp, &f, 100, 1)
	tp.Flags().IntVar(&f.runs, "runs", 3, "runs per publisher")
	tp.Flags().StringVar(&f.write, "write", "rows", "how the drained events are written: rows (the outbox table) or messages "+
		"(pg_logical_emit_message; a PostgreSQL log lane only)")
	tp.Flags().DurationVar(&f.brokerDelay, "broker-delay", 0,
		"instead of the lane's broker, a publisher that waits this long per batch and uses no CPU (a broker on another host)")
	cmd.PersistentFlags().StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the measurement to this file")
	lat := &cobra.Command{Use: "latency", Short: "commit → broker ack latency at a steady rate, default lane settings (from the producer's commit returning to the ack)",
		Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error { return a.benchLatency(cmd.Context(), f) }}
	lat.Flags().IntVar(&f.rate, "rate", 500, "events per second")
	lat.Flags().DurationVar(&f.duration, "duration", 10*time.Second, "how long to produce")
	lat.Flags().StringVar(&f.producer, "producer", "same", "where the producer runs: same (this process) or other (a child process)")
	sourceFlags(lat, &f)
	idle := &cobra.Command{Use: "idle", Short: "CPU an idle relay uses, as a share of one core",
		Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error { return a.benchIdle(cmd.Context(), f) }}
	idle.Flags().DurationVar(&f.duration, "duration", 10*time.Second, "how long to measure")
	sourceFlags(idle, &f)
	produce := &cobra.Command{Use: "produce", Hidden: true, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.benchProduce(cmd.Context(), f) }}
	produce.Flags().IntVar(&f.rate, "rate", 500, "events per second")
	produce.Flags().DurationVar(&f.duration, "duration", 10*time.Second, "how long to produce")
	keep := &cobra.Command{Use: "keepup", Short: "whether the relay keeps up with producers committing as fast as the database takes them",
		Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error { return a.benchKeepUp(cmd.Context(), f) }}
	keep.Flags().IntVar(&f.events, "events", 100000, "events in all")
	keep.Flags().IntVar(&f.producers, "producers", 4, "concurrent producers")
	keep.Flags().IntVar(&f.txSize, "tx", 100, "events per producer transaction")
	laneFlags(keep, &f, 1000, 2)
	cmd.AddCommand(tp, lat, idle, produce, keep)
	return cmd
}

// laneFlags adds the bench lane's settings to cmd, with the given
// defaults for batch size and workers.
func laneFlags(cmd *cobra.Command, f *benchFlags, batch, workers int) {
	cmd.Flags().IntVar(&f.batch, "batch", batch, "batch_size")
	cmd.Flags().IntVar(&f.workers, "workers", workers, "workers (concurrency)")
	cmd.Flags().IntVar(&f.payload, "payload", 1024, "payload bytes")
	sourceFlags(cmd, f)
}

// sourceFlags adds the bench lane's source and what it does with
// delivered rows to cmd.
func sourceFlags(cmd *cobra.Command, f *benchFlags) {
	cmd.Flags().StringVar(&f.source, "source", "poll", "the bench lane's source: poll or log (docs/loglanes.md)")
	cmd.Flags().StringVar(&f.onDelivered, "on-delivered", "mark", "what a log lane does with delivered rows: mark or delete (docs/loglanes.md)")
}

// checkLaneFlags refuses a --source or --on-delivered the bench lane
// cannot take, by the lane's own validation, as a usage error.
func checkLaneFlags(f benchFlags) error {
	l := relay.Lane{Source: relay.Source(f.source), OnDelivered: relay.OnDelivered(f.onDelivered)}
	if err := l.Validate(); err != nil {
		return usagef("--source %s --on-delivered %s: %v", f.source, f.onDelivered, err)
	}
	return nil
}

func (a *app) benchKeepUp(ctx context.Context, f benchFlags) error {
	if f.events <= 0 || f.producers <= 0 || f.txSize <= 0 || f.batch <= 0 || f.workers <= 0 || f.payload < 0 {
		return usagef("--events, --producers, --tx, --batch and --workers must be positive, --payload not negative")
	}
	if err := checkLaneFlags(f); err != nil {
		return err
	}
	rt, s, err := a.benchSetup(ctx, f, true)
	if err != nil {
		return err
	}
	defer rt.Close()
	s.Source, s.OnDelivered = relay.Source(f.source), relay.OnDelivered(f.onDelivered)
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	res, err := bench.KeepUp(ctx, s, bench.KeepUpParams{Events: f.events, Producers: f.producers, TxSize: f.txSize,
		Batch: f.batch, Workers: f.workers, Payload: f.payload})
	if err != nil {
		return err
	}
	if f.asJSON {
		return json.NewEncoder(a.stdout).Encode(res)
	}
	fmt.Fprintf(a.stdout, "store %s, %s lane, batch %d, workers %d; %d producers, %d events per transaction, %d events of %d B\n",
		rt.File.Store.Driver, f.source, f.batch, f.workers, f.producers, f.txSize, f.events, f.payload)
	fmt.Fprintf(a.stdout, "  inserts, no relay:     %8.0f events/s\n", res.InsertAlone)
	fmt.Fprintf(a.stdout, "  inserts, relay on:     %8.0f events/s\n", res.InsertWithRelay)
	fmt.Fprintf(a.stdout, "  relayed meanwhile:     %8.0f events/s\n", res.Relay)
	fmt.Fprintf(a.stdout, "  left when they ended:  %8d events, delivered %s later\n", res.Backlog, res.CatchUp.Round(time.Millisecond))
	return nil
}

// benchSetup opens the store and the lane's broker.
func (a *app) benchSetup(ctx context.Context, f benchFlags, withBroker bool) (*daemon.Runtime, bench.Setup, error) {
	rt, err := a.load(ctx, openBare, f.lane)
	if err != nil {
		return nil, bench.Setup{}, err
	}
	lane, err := rt.File.Lane(f.lane)
	if err != nil {
		rt.Close()
		return nil, bench.Setup{}, err
	}
	s := bench.Setup{Store: rt.Store, Destination: lane.Destination}
	if withBroker {
		log, _ := a.logger(rt.File)
		if err := rt.StartBrokers(ctx, log); err != nil {
			rt.Close()
			return nil, bench.Setup{}, err
		}
		for _, l := range rt.Lanes {
			if l.Name == lane.Name {
				s.Publisher = l.Publisher
			}
		}
	}
	return rt, s, nil
}

func (a *app) benchThroughput(ctx context.Context, f benchFlags) error {
	if f.events <= 0 || f.batch <= 0 || f.workers <= 0 || f.runs <= 0 || f.payload < 0 {
		return usagef("--events, --batch, --workers and --runs must be positive, --payload not negative")
	}
	if f.brokerDelay < 0 {
		return usagef("--broker-delay must not be negative")
	}
	if err := checkLaneFlags(f); err != nil {
		return err
	}
	switch {
	case f.write != "rows" && f.write != "messages":
		return usagef("--write %q: want rows or messages", f.write)
	case f.write == "messages" && f.source != string(relay.SourceLog):
		return usagef("--write messages needs --source log: logical messages exist only in the database's log")
	}
	rt, s, err := a.benchSetup(ctx, f, f.brokerDelay == 0)
	if err != nil {
		return err
	}
	defer rt.Close()
	if f.brokerDelay > 0 {
		s.Publisher = bench.Delay{Wait: f.brokerDelay}
	}
	s.Source, s.OnDelivered = relay.Source(f.source), relay.OnDelivered(f.onDelivered)
	s.Messages = f.write == "messages"
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	res, err := bench.Throughput(ctx, s, bench.ThroughputParams{Events: f.events, Batch: f.batch,
		Workers: f.workers, Payload: f.payload, Runs: f.runs})
	if err != nil {
		return err
	}
	if f.asJSON {
		return json.NewEncoder(a.stdout).Encode(res)
	}
	fmt.Fprintf(a.stdout, "store %s, batch %d, workers %d, %d events of %d B, %d runs (medians)\n",
		rt.File.Store.Driver, f.batch, f.workers, f.events, f.payload, f.runs)
	if f.brokerDelay > 0 {
		fmt.Fprintf(a.stdout, "  (broker: a publisher that waits %v per batch, using no CPU)\n", f.brokerDelay)
	}
	fmt.Fprintf(a.stdout, "  broker:              %8.0f events/s\n", res.Broker)
	fmt.Fprintf(a.stdout, "  store limit (no-op): %8.0f events/s\n", res.Limit)
	fmt.Fprintf(a.stdout, "  ratio:               %8.2f\n", res.RatioOfLimit)
	fmt.Fprintf(a.stdout, "  enqueue:             %8.0f events/s (1000 per transaction)\n", res.EnqueueRate)
	for _, st := range []struct {
		name  string
		steps bench.Steps
	}{{"broker", res.BrokerSteps}, {"no-op", res.LimitSteps}} {
		fmt.Fprintf(a.stdout, "  per batch (%s, last run): claim %s, publish %s, mark %s over %d batches\n", st.name,
			st.steps.Claim.Round(time.Microsecond), st.steps.Publish.Round(time.Microsecond), st.steps.Mark.Round(time.Microsecond), st.steps.Batches)
	}
	return nil
}

func (a *app) benchLatency(ctx context.Context, f benchFlags) error {
	if f.rate <= 0 || f.duration <= 0 {
		return usagef("--rate and --duration must be positive")
	}
	if f.producer != "same" && f.producer != "other" {
		return usagef("--producer %q is not same or other", f.producer)
	}
	if f.brokerDelay < 0 {
		return usagef("--broker-delay must not be negative")
	}
	if err := checkLaneFlags(f); err != nil {
		return err
	}
	rt, s, err := a.benchSetup(ctx, f, f.brokerDelay == 0)
	if err != nil {
		return err
	}
	defer rt.Close()
	if f.brokerDelay > 0 {
		s.Publisher = bench.Delay{Wait: f.brokerDelay}
	}
	s.Source, s.OnDelivered = relay.Source(f.source), relay.OnDelivered(f.onDelivered)
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	p := bench.LatencyParams{Rate: f.rate, Duration: f.duration}
	if f.producer == "other" {
		p.Producer = a.childProducer(f)
	}
	res, err := bench.Latency(ctx, s, p)
	if err != nil {
		return err
	}
	if f.asJSON {
		return json.NewEncoder(a.stdout).Encode(res)
	}
	fmt.Fprintf(a.stdout, "store %s, %s lane, %d events/s for %s, producer in %s process: %d events\n",
		rt.File.Store.Driver, f.source, f.rate, f.duration, f.producer, res.Events)
	fmt.Fprintf(a.stdout, "  commit → ack p50 %s, p99 %s, max %s; relay process CPU %.1f%% of a core\n",
		res.P50.Round(10*time.Microsecond), res.P99.Round(10*time.Microsecond), res.Max.Round(10*time.Microsecond), res.RelayCPU*100)
	return nil
}

// childProducer runs `herald bench produce` in another process, which
// prints "EVENT_ID UNIX_NANOS" for each commit.
func (a *app) childProducer(f benchFlags) func(ctx context.Context, committed func(string, time.Time)) error {
	return func(ctx context.Context, committed func(string, time.Time)) error {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		args := []string{"bench", "produce", "--rate", strconv.Itoa(f.rate), "--duration", f.duration.String()}
		if a.configPath != "" {
			args = append(args, "--config", a.configPath)
		}
		if f.lane != "" {
			args = append(args, "--lane", f.lane)
		}
		cmd := exec.CommandContext(ctx, self, args...)
		cmd.Stderr = a.stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			id, ns, ok := strings.Cut(sc.Text(), " ")
			if n, err := strconv.ParseInt(ns, 10, 64); ok && err == nil {
				committed(id, time.Unix(0, n))
			}
		}
		return cmd.Wait()
	}
}

func (a *app) benchProduce(ctx context.Context, f benchFlags) error {
	rt, s, err := a.benchSetup(ctx, f, false)
	if err != nil {
		return err
	}
	defer rt.Close()
	w := bufio.NewWriter(a.stdout)
	defer w.Flush()
	return bench.Produce(ctx, s, f.rate, f.duration, func(id string, at time.Time) {
		fmt.Fprintf(w, "%s %d\n", id, at.UnixNano())
	})
}

func (a *app) benchIdle(ctx context.Context, f benchFlags) error {
	if err := checkLaneFlags(f); err != nil {
		return err
	}
	rt, s, err := a.benchSetup(ctx, f, false)
	if err != nil {
		return err
	}
	defer rt.Close()
	s.Source, s.OnDelivered = relay.Source(f.source), relay.OnDelivered(f.onDelivered)
	cpu, err := bench.IdleCPU(ctx, s, f.duration)
	if err != nil {
		return err
	}
	if f.asJSON {
		return json.NewEncoder(a.stdout).Encode(map[string]float64{"idle_cpu_core_fraction": cpu})
	}
	fmt.Fprintf(a.stdout, "store %s, %s lane: an idle relay used %.2f%% of a core over %s\n", rt.File.Store.Driver, f.source,
		cpu*100, f.duration)
	return nil
}

// startCPUProfile profiles this process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, usagef("--cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
