package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/retrybudget/retrybudget"
)

// summary is the end state of a run, as both sides saw it.
type summary struct {
	actions  int
	attempts int // attempts the Transport reported through its Observer
	requests int // requests that reached the provider
	retries  map[retrybudget.Class]int

	applied    int // effects the provider applied
	duplicates int // effects applied to an already charged order; must be 0

	succeeded int
	replayed  int // successes answered from the provider's stored response
	rejected  int
	gaveUp    []result
	charged   int // give-ups whose charge the provider applied anyway
	// chargedUnflagged counts charged give-ups whose Outcome.MaybeApplied
	// was false: the client was told no attempt could have had an effect.
	chargedUnflagged int
	unaccounted      []result

	elapsed time.Duration
}

// ok reports whether the run kept its promises: no duplicate effect and
// every action accounted for.
func (s *summary) ok() bool {
	return s.duplicates == 0 && len(s.unaccounted) == 0 &&
		s.succeeded+s.rejected+len(s.gaveUp) == s.actions
}

// newSummary puts together the client's results, the live tally and the
// provider's ledger. A success the ledger does not show as applied exactly
// once, or a rejection it shows as applied, is unaccounted for: the client
// would believe something about the charge that is not so.
func newSummary(results []result, t *tally, p *provider, elapsed time.Duration) *summary {
	lt := p.ledger.totals()
	s := &summary{
		actions:    len(results),
		attempts:   int(t.attempts.Load()),
		requests:   int(p.requests.Load()),
		retries:    make(map[retrybudget.Class]int),
		applied:    lt.applied,
		duplicates: lt.duplicates,
		elapsed:    elapsed,
	}
	for c := range t.byClass {
		if n := t.byClass[c].Load(); n > 0 {
			s.retries[retrybudget.Class(c)] = int(n)
		}
	}
	for _, r := range results {
		switch {
		case r.ending == succeeded && lt.perOrder[r.action.Key] == 1:
			s.succeeded++
			if r.replayed {
				s.replayed++
			}
		case r.ending == rejected && lt.perOrder[r.action.Key] == 0:
			s.rejected++
		case r.ending == gaveUp:
			s.gaveUp = append(s.gaveUp, r)
			if lt.perOrder[r.action.Key] > 0 {
				s.charged++
				if !r.outcome.MaybeApplied {
					s.chargedUnflagged++
				}
			}
		default:
			if r.err == nil {
				r.err = fmt.Errorf("%s, but the provider applied it %d times", r.ending, lt.perOrder[r.action.Key])
			}
			s.unaccounted = append(s.unaccounted, r)
		}
	}
	return s
}

// maxListed is how many give-ups the report lists one by one.
const maxListed = 5

// write prints the summary as a table. now is the time retry-at times are
// shown relative to.
func (s *summary) write(w io.Writer, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(label string, n int, note string) {
		fmt.Fprintf(tw, "%s\t%s\n", label, strings.TrimRight(fmt.Sprintf("%5d  %s", n, note), " "))
	}

	row("actions", s.actions, fmt.Sprintf("in %s", s.elapsed.Round(10*time.Millisecond)))
	row("attempts", s.attempts, "seen by the Transport")
	row("provider requests", s.requests, hiddenRetries(s.requests-s.attempts))
	row("retries", sumValues(s.retries), "by class of the failed attempt:")
	for c := retrybudget.ClassSuccess; c <= retrybudget.ClassBusiness; c++ {
		if n := s.retries[c]; n > 0 {
			row("  "+c.String(), n, "")
		}
	}
	row("effects applied", s.applied, "charges the provider made")
	row("duplicate effects", s.duplicates, "must be 0")
	row("succeeded", s.succeeded, fmt.Sprintf("%d answered by replay after a lost response", s.replayed))
	row("rejected (business)", s.rejected, "400, not retried")
	row("gave up", len(s.gaveUp), "by reason:")
	for _, rc := range countReasons(s.gaveUp) {
		row("  "+rc.name, rc.n, "")
	}
	row("charged, then gave up", s.charged, "the same action later gets the receipt, not a second charge")
	if s.chargedUnflagged > 0 {
		row("  Outcome.MaybeApplied false", s.chargedUnflagged, "attempts net/http re-sent on its own are missing from the Outcome")
	}
	row("unaccounted", len(s.unaccounted), "must be 0")

	if len(s.gaveUp) > 0 {
		fmt.Fprintf(tw, "\nGIVE-UP\tATTEMPTS\tREASON\tRETRY AT\n")
		for _, r := range sample(s.gaveUp, maxListed) {
			fmt.Fprintf(tw, "%s/%s\t%d\t%s\t%s\n", r.action.Tenant, r.action.Key,
				r.outcome.Attempts, reasonName(r.outcome.Reason), retryAt(r.outcome.RetryAt, now))
		}
		if more := len(s.gaveUp) - maxListed; more > 0 {
			fmt.Fprintf(tw, "… and %d more\n", more)
		}
	}
	for _, r := range s.unaccounted {
		fmt.Fprintf(tw, "UNACCOUNTED %s/%s\t\t%v\t\n", r.action.Tenant, r.action.Key, r.err)
	}
	return tw.Flush()
}

// sample returns up to n give-ups in their original order, the first of
// each reason included before any second one, so that a short list still
// shows every kind.
func sample(gaveUp []result, n int) []result {
	picked := make([]bool, len(gaveUp))
	seen := make(map[string]bool)
	count := 0
	for pass := 0; pass < 2; pass++ {
		for i, r := range gaveUp {
			name := reasonName(r.outcome.Reason)
			if count == n || picked[i] || (pass == 0 && seen[name]) {
				continue
			}
			picked[i], seen[name] = true, true
			count++
		}
	}
	out := make([]result, 0, count)
	for i, r := range gaveUp {
		if picked[i] {
			out = append(out, r)
		}
	}
	return out
}

// hiddenRetries explains requests the provider saw but the Transport did
// not count: net/http's Transport re-sends a request with an
// Idempotency-Key on its own when a reused connection dies before the
// response.
func hiddenRetries(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("%d more re-sent by net/http itself after a dropped keep-alive connection", n)
}

// reasonCount is how many give-ups had one reason.
type reasonCount struct {
	name string
	n    int
}

// countReasons counts give-ups by reason, in a fixed order.
func countReasons(gaveUp []result) []reasonCount {
	var counts []reasonCount
	for _, r := range gaveUp {
		name := reasonName(r.outcome.Reason)
		i := 0
		for i < len(counts) && counts[i].name != name {
			i++
		}
		if i == len(counts) {
			counts = append(counts, reasonCount{name: name})
		}
		counts[i].n++
	}
	return counts
}

// reasonName names why the Transport stopped: its reason code
// (retrybudget.ReasonCode), the one otelretry and the planner print.
func reasonName(err error) string {
	if err == nil {
		return "none"
	}
	return retrybudget.ReasonCode(err)
}

// retryAt shows when to come back, as a clock time and as a wait from now.
func retryAt(at, now time.Time) string {
	if at.IsZero() {
		return "-"
	}
	wait := at.Sub(now)
	if wait < time.Second {
		// A backoff-sized hint has passed by the time the report prints.
		return at.Local().Format(time.TimeOnly) + " (now)"
	}
	return fmt.Sprintf("%s (in %s)", at.Local().Format(time.TimeOnly), wait.Round(time.Second))
}

func sumValues(m map[retrybudget.Class]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
