package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// isTerminal reports whether f is a character device, such as a terminal,
// where a line redrawn with carriage returns reads as a live display.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress prints t's counters to w while the load runs: one line redrawn
// every 100ms when live, else a plain line every second, for logs. A nil w
// prints nothing.
type progress struct {
	w     io.Writer
	live  bool
	t     *tally
	total int
	stop  chan struct{}
	done  chan struct{}
}

// startProgress starts printing; call finish to print the last line and
// stop.
func startProgress(w io.Writer, live bool, t *tally, total int) *progress {
	p := &progress{w: w, live: live, t: t, total: total, stop: make(chan struct{}), done: make(chan struct{})}
	if w == nil {
		close(p.done)
		return p
	}
	every := time.Second
	if live {
		every = 100 * time.Millisecond
	}
	go p.loop(every)
	return p
}

func (p *progress) loop(every time.Duration) {
	defer close(p.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			p.print(false)
		case <-p.stop:
			p.print(true)
			return
		}
	}
}

// finish prints the final counters and waits for the printer to stop.
func (p *progress) finish() {
	if p.w != nil {
		close(p.stop)
	}
	<-p.done
}

// print writes the current counters, over the previous line when live.
func (p *progress) print(last bool) {
	line := fmt.Sprintf("%d/%d done  attempts %d  retries %d  rejected %d  gave up %d",
		p.t.done.Load(), p.total, p.t.attempts.Load(), p.t.retries.Load(),
		p.t.rejected.Load(), p.t.gaveUp.Load())
	switch {
	case !p.live:
		fmt.Fprintln(p.w, line)
	case last:
		fmt.Fprintf(p.w, "\r%s\n", line)
	default:
		fmt.Fprintf(p.w, "\r%s", line)
	}
}
