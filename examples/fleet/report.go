package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// summary is what a run shows: the provider's counts per tenant and the
// workers' tallies summed over the fleet.
type summary struct {
	duration time.Duration // from the go line to the end of the run
	rate     int           // the provider's limit, per second
	// firstCome reports a run without the fair queue.
	firstCome bool
	tenants   []tenantSummary
	provider  providerStats
	codes     []int // each worker's exit status
}

// tenantSummary is one tenant's line of the report.
type tenantSummary struct {
	name string
	// effects counts the tenant's charges the provider applied (its
	// first charge under each key).
	effects int
	// tally sums the workers' tallies for the tenant.
	tally
}

// newSummary sums the workers' reports and joins them with the provider's
// counts.
func newSummary(d time.Duration, rate int, p providerStats, reports []report, codes []int) *summary {
	s := &summary{duration: d, rate: rate, provider: p, codes: codes}
	for _, t := range tenants {
		ts := tenantSummary{name: t.name, effects: p.Effects[t.name], tally: tally{Retries: map[string]int{}}}
		for _, r := range reports {
			w, ok := r[t.name]
			if !ok {
				continue
			}
			ts.Loops += w.Loops
			ts.Charged += w.Charged
			ts.Replayed += w.Replayed
			ts.Reruns += w.Reruns
			ts.RerunsSent += w.RerunsSent
			ts.Stopped += w.Stopped
			ts.Held += w.Held
			ts.Unfinished += w.Unfinished
			ts.Interrupted += w.Interrupted
			for code, n := range w.Retries {
				ts.Retries[code] += n
			}
		}
		s.tenants = append(s.tenants, ts)
	}
	return s
}

// perSecond returns the tenant's applied charges per second of the run.
func (s *summary) perSecond(t tenantSummary) float64 {
	return float64(t.effects) / s.duration.Seconds()
}

// share returns the tenant's applied charges as a fraction of what the
// provider's limit allows in the run.
func (s *summary) share(t tenantSummary) float64 {
	return float64(t.effects) / (float64(s.rate) * s.duration.Seconds())
}

// effects returns the charges the provider applied, every tenant together.
func (s *summary) effects() int {
	n := 0
	for _, t := range s.tenants {
		n += t.effects
	}
	return n
}

// check returns why the run failed its promises, or nil: a charge applied
// twice, a re-delivered order sent again, a worker that failed, or a
// charge the fleet could not account for.
func (s *summary) check() error {
	var errs []error
	if s.provider.Duplicates != 0 {
		errs = append(errs, fmt.Errorf("%d duplicate effects", s.provider.Duplicates))
	}
	for _, t := range s.tenants {
		if t.RerunsSent != 0 {
			errs = append(errs, fmt.Errorf("%s: %d re-delivered orders were sent again", t.name, t.RerunsSent))
		}
	}
	for i, c := range s.codes {
		if c != 0 {
			errs = append(errs, fmt.Errorf("worker %d exited %d", i+1, c))
		}
	}
	return errors.Join(errs...)
}

// write prints the report.
func (s *summary) write(w io.Writer) {
	queue := "fair queue"
	if s.firstCome {
		queue = "no fair queue (first come, first served)"
	}
	fmt.Fprintf(w, "%d worker processes, 2 tenants, one API key limited to %d req/s, %s, %v\n\n",
		len(s.codes), s.rate, queue, s.duration.Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tenant\tloops\tcharges\treq/s\tshare of limit\treruns\treplayed\tretries\t")
	for _, t := range s.tenants {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f %%\t%d\t%d\t%d\t\n",
			t.name, t.Loops, t.effects, s.perSecond(t), 100*s.share(t), t.Reruns, t.Replayed, sum(t.Retries))
	}
	all := float64(s.effects())
	fmt.Fprintf(tw, "all\t\t%d\t%.1f\t%.1f %%\t\t\t\t\n",
		s.effects(), all/s.duration.Seconds(), 100*all/(float64(s.rate)*s.duration.Seconds()))
	tw.Flush()

	fmt.Fprintf(w, "\nprovider: %d requests, %d charges applied, %d answered 429, %d duplicate effects\n",
		s.provider.Requests, s.effects(), s.provider.Limited, s.provider.Duplicates)
	for _, t := range s.tenants {
		fmt.Fprintf(w, "%s: retried %s; stopped %d, held %d; in hand at the end %d (%d maybe sent)\n",
			t.name, codes(t.Retries), t.Stopped, t.Held, t.Unfinished, t.Interrupted)
	}
	exited := 0
	for _, c := range s.codes {
		if c == 0 {
			exited++
		}
	}
	fmt.Fprintf(w, "workers: %d of %d exited 0\n", exited, len(s.codes))
}

// sum adds the counts of m.
func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// codes prints retry counts by reason code, in code order.
func codes(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, code := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", code, m[code])
	}
	return b.String()
}
