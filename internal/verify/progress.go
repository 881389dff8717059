package verify

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progressState is what the progress line shows.
type progressState struct {
	// Elapsed is the time since production began, Window --duration.
	Elapsed, Window time.Duration
	// Written counts events written so far (committed, rolled back or
	// still open) of Events, --events.
	Written, Events int
	// Committed counts committed events, ReadBack those of them read back.
	Committed, ReadBack int
	// FaultsDone of Faults were injected; Fault is the one under way.
	FaultsDone, Faults int
	Fault              string
	Relays             int
}

// barWidth is the progress bar's width in cells.
const barWidth = 20

// progressLine renders s as one line (no newline): a bar of the window
// while producing, then of the events read back while draining.
func progressLine(s progressState) string {
	frac, phase := 0.0, ""
	if s.Elapsed < s.Window {
		frac = float64(s.Elapsed) / float64(s.Window)
		phase = fmt.Sprintf("%s of %s", s.Elapsed.Round(time.Second), s.Window.Round(time.Second))
	} else {
		frac = 1
		if s.Committed > 0 {
			frac = float64(s.ReadBack) / float64(s.Committed)
		}
		phase = fmt.Sprintf("draining, %s", (s.Elapsed - s.Window).Round(time.Second))
	}
	frac = min(max(frac, 0), 1)
	filled := int(frac * barWidth)
	fault := ""
	if s.Fault != "" {
		fault = ", now " + s.Fault
	}
	return fmt.Sprintf("herald verify [%s%s] %3.0f%%  %s  written %d/%d, committed %d, read back %d, faults %d/%d%s, relays %d",
		strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), frac*100, phase,
		s.Written, s.Events, s.Committed, s.ReadBack, s.FaultsDone, s.Faults, fault, s.Relays)
}

// Progress refresh intervals: in place on a terminal, a line at a time
// in a log.
const (
	terminalEvery = 250 * time.Millisecond
	logEvery      = 2 * time.Second
)

// showProgress writes state to w until the returned stop is called: on a
// terminal one line redrawn every tick (carriage return, erase to the end
// of the line) and ended with a newline by stop; elsewhere (a CI log) a
// line every tick.
func showProgress(w io.Writer, tty bool, every time.Duration, state func() progressState) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				if tty {
					fmt.Fprintf(w, "\r%s\x1b[K\n", progressLine(state()))
				}
				return
			case <-t.C:
				if tty {
					fmt.Fprintf(w, "\r%s\x1b[K", progressLine(state()))
				} else {
					fmt.Fprintln(w, progressLine(state()))
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
