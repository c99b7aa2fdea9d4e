package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/plan"
	"github.com/retrybudget/retrybudget/presets"
)

// maxPlannedAttempts bounds --max-attempts: a longer plan is no longer a
// table anyone reads, and each attempt is a row.
const maxPlannedAttempts = 1000

// planCmd runs "retrybudget plan": it works out what a policy does to a
// call whose every attempt fails, and prints it as a table or draws it as
// an SVG timeline.
func planCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		preset         = fs.String("preset", "", "start from this preset's policy: "+strings.Join(presets.Names(), ", "))
		maxAttempts    = fs.Int("max-attempts", 0, "attempts per call, the first included (0: 4; negative: 1)")
		baseDelay      = fs.Duration("base-delay", 0, "backoff before the first retry, doubling after (0: 200ms)")
		maxDelay       = fs.Duration("max-delay", 0, "cap on a backoff delay, jitter included (0: 30s)")
		jitter         = fs.Float64("jitter", 0, "randomization factor in [0, 1] (0: 0.5; negative: none)")
		maxWait        = fs.Duration("max-wait", 0, "longest Retry-After obeyed by sleeping (0: 60s)")
		deadline       = fs.Duration("deadline", 0, "bound on the whole call (0: none)")
		attemptTimeout = fs.Duration("attempt-timeout", 0, "bound on one attempt; the plan assumes every failing attempt takes this long (0: no bound, assume 1s)")
		retryAfter     = fs.Duration("retry-after", 0, "assume the provider sends this Retry-After with every failure (0: none)")
		budgetPercent  percentFlag
		budgetFloor    = fs.Float64("budget-min-per-sec", 0, "retries per second the budget allows whatever the traffic (0: 10; negative: none)")
		budgetWindow   = fs.Duration("budget-window", 0, "how long the budget counts attempts (0: 10s)")
		noBudget       = fs.Bool("no-budget", false, "plan for budget.Unlimited: every retry allowed")
		rps            = fs.Float64("rps", plan.DefaultFirstAttemptsPerSec, "first attempts per second where the budget counts them, for the amplification")
		format         = fs.String("format", "text", "output format: text or svg")
		out            = fs.String("out", "", "write to this file instead of stdout")
	)
	fs.Var(&budgetPercent, "budget-percent", `share of first attempts that may be retried, as "10%" or 0.1 (0: 10%; negative: none)`)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: retrybudget plan [flags]")
		fmt.Fprintln(stderr, "\nPrints what a retry policy does to a call whose every attempt fails: when each")
		fmt.Fprintln(stderr, "attempt starts (its jitter range), which attempts cannot fit the deadline, when")
		fmt.Fprintln(stderr, "the call gives up at the latest, and how far the retry budget lets an outage")
		fmt.Fprintln(stderr, "multiply the load. Flags override the preset; a flag's 0 means what a zero")
		fmt.Fprintln(stderr, "Config field means.")
		fmt.Fprintln(stderr, "\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "retrybudget plan: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if *format != "text" && *format != "svg" {
		return fail("unknown format %q (want text or svg)", *format)
	}
	if !(*rps > 0) {
		return fail("--rps must be above 0")
	}

	var (
		p      plan.Policy
		source = "retrybudget defaults"
		note   string
	)
	if *preset != "" {
		r, ok := presets.ByName(*preset)
		if !ok {
			return fail("unknown preset %q (want one of %s)", *preset, strings.Join(presets.Names(), ", "))
		}
		source = fmt.Sprintf("preset %s (%s%s)", strings.ToLower(strings.TrimSpace(*preset)), r.Host, r.PathPrefix)
		p = plan.FromConfig(r.Config)
		note = budgetNote(r.Config.Budget)
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "max-attempts":
			p.MaxAttempts = *maxAttempts
		case "base-delay":
			p.BaseDelay = *baseDelay
		case "max-delay":
			p.MaxDelay = *maxDelay
		case "jitter":
			p.Jitter = *jitter
		case "max-wait":
			p.MaxWait = *maxWait
		case "deadline":
			p.Deadline = *deadline
		case "attempt-timeout":
			p.AttemptDuration = *attemptTimeout
		case "retry-after":
			p.RetryAfter = *retryAfter
		case "budget-percent":
			p.Budget.Percent, note = float64(budgetPercent), ""
		case "budget-min-per-sec":
			p.Budget.MinRetriesPerSec, note = *budgetFloor, ""
		case "budget-window":
			p.Budget.Window, note = *budgetWindow, ""
		case "no-budget":
			p.NoBudget, note = *noBudget, ""
		}
	})
	p.FirstAttemptsPerSec = *rps
	// The Config's AttemptTimeout, not the planner's assumption, decides
	// what the header says about the attempt bound.
	timeoutSet := p.AttemptDuration > 0
	if n := p.WithDefaults().MaxAttempts; n > maxPlannedAttempts {
		return fail("--max-attempts %d: the planner draws at most %d", n, maxPlannedAttempts)
	}
	pl := plan.Compute(p)

	write := func(w io.Writer) error {
		if *format == "svg" {
			return writeSVG(w, pl, source)
		}
		return writeText(w, pl, source, note, timeoutSet)
	}
	var err error
	if *out == "" {
		err = write(stdout)
	} else {
		err = writeFile(*out, write)
	}
	if err != nil {
		fmt.Fprintf(stderr, "retrybudget plan: %v\n", err)
		return 1
	}
	return 0
}

// writeFile creates name and writes it with write, reporting a failed
// close too: that is where a full disk shows.
func writeFile(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// budgetNote explains a Budget whose rule the planner cannot read: a
// budget.Local keeps its budget.Config unexported, and a shared budget's
// lives in its own configuration.
func budgetNote(b budget.Budget) string {
	switch b.(type) {
	case nil, budget.Unlimited, *budget.Unlimited:
		return ""
	}
	return fmt.Sprintf("the Config's own Budget (%T) does not expose its rule; the default rule is assumed, set --budget-* to what it was built with", b)
}

// writeText prints pl as the header of its effective policy, the attempt
// table and the worst-case and amplification lines.
func writeText(w io.Writer, pl plan.Plan, source, budgetNote string, timeoutSet bool) error {
	p := pl.Policy
	ew := &errWriter{w: w}
	ew.printf("policy: %s\n", source)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  max attempts\t%d\n", p.MaxAttempts)
	fmt.Fprintf(tw, "  backoff\t%s doubling, capped at %s, %s\n", short(p.BaseDelay), short(p.MaxDelay), jitterText(p.Jitter))
	fmt.Fprintf(tw, "  max wait\t%s\n", short(p.MaxWait))
	if p.Deadline > 0 {
		fmt.Fprintf(tw, "  deadline\t%s\n", short(p.Deadline))
	} else {
		fmt.Fprintf(tw, "  deadline\tnone\n")
	}
	if timeoutSet {
		fmt.Fprintf(tw, "  attempt timeout\t%s (every failing attempt assumed to take it)\n", short(p.AttemptDuration))
	} else {
		fmt.Fprintf(tw, "  attempt timeout\tnone (every failing attempt assumed to take %s)\n", short(p.AttemptDuration))
	}
	if p.RetryAfter > 0 {
		fmt.Fprintf(tw, "  retry-after\t%s on every failure (assumed)\n", short(p.RetryAfter))
	} else {
		fmt.Fprintf(tw, "  retry-after\tnone (assumed)\n")
	}
	if p.NoBudget {
		fmt.Fprintf(tw, "  budget\tnone (budget.Unlimited)\n")
	} else {
		fmt.Fprintf(tw, "  budget\t%s%% of first attempts, or %g retries/s, over %s\n",
			pct(p.Budget.Percent), p.Budget.MinRetriesPerSec, short(p.Budget.Window))
		if budgetNote != "" {
			fmt.Fprintf(tw, "  \t(%s)\n", budgetNote)
		}
	}
	fmt.Fprintf(tw, "  first attempts\t%g/s (assumed)\n", p.FirstAttemptsPerSec)
	tw.Flush()

	ew.printf("\n")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fits := "fits deadline"
	if p.Deadline > 0 {
		fits = "fits " + short(p.Deadline) + " deadline"
	}
	fmt.Fprintf(tw, "attempt\twait before it\tearliest start\tlatest start\t%s\n", fits)
	var maybe, never, tooLong bool
	for _, a := range pl.Attempts {
		wait, earliest, latest := "-", short(a.Earliest), short(a.Latest)
		switch {
		case a.Stop == retrybudget.ErrWaitTooLong:
			earliest, latest = "-", "-"
		case a.N > 1:
			wait = short(a.WaitMin)
			if a.WaitMax != a.WaitMin {
				wait += " .. " + short(a.WaitMax)
			}
			if p.RetryAfter > 0 && a.WaitMin == p.RetryAfter {
				wait += " (Retry-After)"
			}
		}
		fit := a.Fit.String()
		switch {
		case a.Stop != nil:
			fit += ": " + retrybudget.ReasonCode(a.Stop)
			never = true
			tooLong = tooLong || a.Stop == retrybudget.ErrWaitTooLong
		case a.Fit == plan.MayMiss:
			maybe = true
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", a.N, wait, earliest, latest, fit)
	}
	tw.Flush()
	if maybe {
		ew.printf("maybe: sent only when the waits before it come out short enough; otherwise the call gives up at once with ErrDeadline\n")
	}
	switch {
	case tooLong:
		ew.printf("never: the Retry-After %s is longer than MaxWait %s, so the call gives up at once after attempt 1 with ErrWaitTooLong\n",
			short(p.RetryAfter), short(p.MaxWait))
	case never:
		ew.printf("never: never sent; the call gives up at once with ErrDeadline before it\n")
	}

	ew.printf("\nworst case: the call ends at the latest %s after it starts, giving up with %s after attempt %d\n",
		short(pl.GiveUp), retrybudget.ReasonCode(pl.Reason), pl.Sendable)
	if p.NoBudget {
		ew.printf("amplification in a total outage: %s per call (no budget)\n", attempts(pl.Sendable))
	} else {
		ew.printf("amplification in a total outage: %s per call with the budget, %d without it\n",
			attempts(pl.Amplification), pl.Sendable)
		ew.printf("  steady state: min(%d, 1 + max(%s%%, %g retries/s ÷ %g first attempts/s)) = %s\n",
			pl.Sendable, pct(p.Budget.Percent), p.Budget.MinRetriesPerSec, p.FirstAttemptsPerSec, num(pl.Amplification))
	}
	return ew.err
}

// attempts formats a count of attempts per call.
func attempts[N int | float64](n N) string {
	if n == 1 {
		return "1 attempt"
	}
	return num(float64(n)) + " attempts"
}

// jitterText describes a randomization factor.
func jitterText(j float64) string {
	if j == 0 {
		return "no jitter"
	}
	return "jitter ±" + pct(j) + "%"
}

// short formats d for a reader: to the millisecond from a second up, to
// the microsecond from a millisecond up, exact below.
func short(d time.Duration) string {
	switch {
	case d >= time.Second:
		d = d.Round(time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}

// pct formats a fraction as a percentage without the float noise of ×100.
func pct(f float64) string { return num(f * 100) }

// num formats f with at most three significant digits.
func num(f float64) string { return strconv.FormatFloat(f, 'g', 3, 64) }

// percentFlag is a fraction given as "10%" or as 0.1, like
// budget.Config.Percent.
type percentFlag float64

func (p *percentFlag) String() string { return num(float64(*p)) }

func (p *percentFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	div := 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, div = t, 100
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New(`want a fraction such as 0.1 or a percentage such as "10%"`)
	}
	*p = percentFlag(f / div)
	return nil
}

// errWriter keeps the first write error, so a long print sequence checks
// once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, a ...any) { fmt.Fprintf(e, format, a...) }
