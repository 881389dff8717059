package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// report is what verify found: the figures, the faults as injected and a
// verdict per guarantee. Its JSON form (--json) is for CI.
type report struct {
	Held        bool   `json:"held"`
	Interrupted bool   `json:"interrupted,omitempty"`
	Error       string `json:"error,omitempty"`

	Lane        string   `json:"lane"`
	Table       string   `json:"table"`
	Destination string   `json:"destination"`
	Ordering    string   `json:"ordering"`
	Relays      int      `json:"relays_started"`
	Faults      []string `json:"faults"`

	Committed  int   `json:"committed"`
	RolledBack int   `json:"rolled_back"`
	Ambiguous  int   `json:"ambiguous_commits"`
	Received   int   `json:"read_back"`
	Duplicates int   `json:"duplicates"`
	Lost       int   `json:"lost"`
	Phantom    int   `json:"phantom"`
	Dead       int64 `json:"dead"`
	InFlight   int64 `json:"in_flight"`
	Pending    int64 `json:"pending"`
	// OrderViolations counts events read before an earlier one of their key.
	OrderViolations int `json:"order_violations"`
	ReadErrors      int `json:"read_errors"`
	// ProjectionApplied counts committed events the scratch projection
	// applied once, ProjectionTwice those it applied more than once.
	ProjectionApplied int `json:"projection_applied_once,omitempty"`
	ProjectionTwice   int `json:"projection_applied_twice,omitempty"`
	// ProducerErrors counts transactions that failed (rolled back, or
	// ambiguous when the commit failed); ProducerError is the last error.
	ProducerErrors int    `json:"producer_errors"`
	ProducerError  string `json:"producer_error,omitempty"`

	Throughput float64 `json:"throughput_per_s"`
	LatencyP50 float64 `json:"commit_to_read_p50_ms"`
	LatencyP99 float64 `json:"commit_to_read_p99_ms"`
	LatencyMax float64 `json:"commit_to_read_max_ms"`

	Injected []injected `json:"injected"`
	Verdicts []verdict  `json:"verdicts"`
	Notes    []string   `json:"notes,omitempty"`
}

// verdict is one guarantee's result.
type verdict struct {
	Check    string   `json:"check"`
	Held     bool     `json:"held"`
	Skipped  bool     `json:"skipped,omitempty"`
	Detail   string   `json:"detail"`
	Examples []string `json:"examples,omitempty"`
}

// abort is a report of a run that could not start.
func (r *report) abort(msg string) *report {
	r.Error, r.Held = msg, false
	return r
}

func (r *report) write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	_, err := io.WriteString(w, r.text())
	return err
}

// text is the report a person reads: the verdicts first, then figures.
func (r *report) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "herald verify: lane %s (ordering %s), scratch table %s, %s\n", r.Lane, r.Ordering, r.Table, r.Destination)
	if r.Error != "" {
		fmt.Fprintf(&b, "\nFAILED to run: %s\n", r.Error)
		return b.String()
	}
	if r.Interrupted {
		b.WriteString("\nINTERRUPTED: what was found so far (events not yet read back count as lost)\n")
	}
	b.WriteString("\n")
	for _, v := range r.Verdicts {
		mark := "held  "
		switch {
		case v.Skipped:
			mark = "n/a   "
		case !v.Held:
			mark = "FAILED"
		}
		fmt.Fprintf(&b, "  %s  %-38s %s\n", mark, v.Check, v.Detail)
		for _, e := range v.Examples {
			fmt.Fprintf(&b, "          %s\n", e)
		}
	}
	fmt.Fprintf(&b, "\nfigures: %d committed, %d rolled back, %d ambiguous commits, %d read back, %d duplicates, %d relays started\n",
		r.Committed, r.RolledBack, r.Ambiguous, r.Received, r.Duplicates, r.Relays)
	fmt.Fprintf(&b, "         %.0f events/s, commit -> read back p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		r.Throughput, r.LatencyP50, r.LatencyP99, r.LatencyMax)
	if r.ProducerErrors > 0 {
		fmt.Fprintf(&b, "         %d producer transactions failed (counted as rolled back or ambiguous), the last: %s\n", r.ProducerErrors, r.ProducerError)
	}
	b.WriteString("faults:")
	if len(r.Injected) == 0 {
		b.WriteString(" none")
	}
	b.WriteString("\n")
	for _, f := range r.Injected {
		fmt.Fprintf(&b, "  %6.1fs  %-16s %s\n", f.At.Seconds(), f.Fault, f.Detail)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if r.Held {
		b.WriteString("\nverdict: every guarantee held\n")
	} else {
		b.WriteString("\nverdict: FAILED\n")
	}
	return b.String()
}
