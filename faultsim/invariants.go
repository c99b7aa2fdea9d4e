package faultsim

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
)

// checkCall checks what the caller of one SDK call saw.
func (r *Run) checkCall(res callResult) {
	if res.died || res.ci == nil {
		return
	}
	o, a := res.out, res.ci.action
	r.prov.mu.Lock()
	applied, arrivals := r.prov.byCall[res.ci.id], r.prov.arrivals[a]
	r.prov.mu.Unlock()
	r.mu.Lock()
	marks := r.marks[r.recordKey(a).Key]
	limErrs, limRefusals := res.ci.limiterErrs, res.ci.limiterRefusals
	r.mu.Unlock()
	if res.ok || o.Replayed {
		return
	}
	if applied > 0 && !o.MaybeApplied {
		r.violate("applied action reported as not applied",
			"action %d run %d: the provider applied %d of this call's sends; its caller got reason %v with MaybeApplied false (repeated %v)",
			a, res.ci.run, applied, o.Reason, o.Repeated)
	}
	if errors.Is(o.Reason, retrybudget.ErrUncertain) && arrivals == 0 && marks == 0 && !r.markedInStore(a) {
		r.violate("unsent action reported as uncertain",
			"action %d run %d: ErrUncertain, but nothing ever reached the provider and no owner marked it as sending", a, res.ci.run)
	}
	if errors.Is(o.Reason, retrybudget.ErrRateLimited) && o.RetryAt.IsZero() {
		r.violate("a rate limit says when to come back",
			"action %d run %d: ErrRateLimited without RetryAt", a, res.ci.run)
	}
	if errors.Is(o.Reason, retrybudget.ErrRateLimited) && limErrs > 0 && limRefusals == 0 {
		r.violate("unavailable limiter reported as a rate limit",
			"action %d run %d: the limiter only failed (%d errors, no refusal), the caller got ErrRateLimited", a, res.ci.run, limErrs)
	}
}

// markedInStore reports whether action a's record is marked as sending: a
// mark whose caller never learned it was written (its connection cut, or
// its context ended while the store ran it) counts as a mark, since it
// tells the next owner that a request may have left.
func (r *Run) markedInStore(a int) bool {
	rec, err := r.store.Get(context.Background(), r.recordKey(a))
	return err == nil && rec.Sending
}

// checkEnd checks the state a schedule leaves once every job is done and a
// lease and a sweep have passed.
func (r *Run) checkEnd() {
	L := r.w.Lease
	time.Sleep(2 * L) // past every lease, one sweep, and every stalled write
	ctx := context.Background()
	r.mu.Lock()
	died, raced := maps.Clone(r.died), maps.Clone(r.raced)
	r.mu.Unlock()
	stuck, err := r.store.Sweep(ctx, 0)
	if err != nil {
		r.violate("sweep", "Sweep: %v", err)
	}
	listed := map[string]bool{}
	for _, rec := range stuck {
		listed[rec.Key.Key] = true
	}
	now := time.Now()
	for a := range r.s.Actions {
		k := r.recordKey(a)
		r.prov.mu.Lock()
		effects, arrivals := r.prov.effects[a], r.prov.arrivals[a]
		r.prov.mu.Unlock()
		r.mu.Lock()
		marks := r.marks[k.Key]
		r.mu.Unlock()
		// Without a ledger nothing remembers an action across processes: a
		// job delivered again after its worker died, or twice at once, may
		// repeat it where the provider honours no key.
		promised := !r.s.NoLedger || r.s.Honours || !died[a] && !raced[a]
		if effects > 1 && promised {
			r.violate("at most one effect per action", "action %d: %d effects at the provider", a, effects)
		}
		if r.s.NoLedger {
			continue
		}
		r.checkRecordDone(ctx, a, effects)
		rec, err := r.store.Get(ctx, k)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			if effects > 0 {
				r.violate("applied action recorded as not applied", "action %d: applied, and the ledger has no record", a)
			}
			continue
		case err != nil:
			r.violate("store", "Get action %d: %v", a, err)
			continue
		}
		r.Logf("end: action %d: %s sending %v, %d effects, %d arrivals", a, rec.State, rec.Sending, effects, arrivals)
		if effects > 0 && rec.State == ledger.StateFailed {
			r.violate("applied action recorded as not applied", "action %d: applied, recorded failed (no effect): %q", a, rec.Reason)
		}
		if arrivals > 0 && !rec.Sending {
			// Store.MarkSending: the mark stays for the record's life, and
			// nothing is sent without it; a record that lost it reads as
			// provably unsent once its lease ends.
			r.violate("applied action recorded as not applied",
				"action %d: the provider got %d of its requests, the record (%s) is not marked as sending", a, arrivals, rec.State)
		}
		if rec.State == ledger.StateUncertain && arrivals == 0 && marks == 0 && !rec.Sending {
			r.violate("unsent action recorded as uncertain",
				"action %d: uncertain (%q), but nothing ever reached the provider and no owner marked it as sending", a, rec.Reason)
		}
		if rec.State == ledger.StateInProgress && rec.LeaseUntil.Before(now) && !listed[k.Key] {
			r.violate("stuck action not listed by Sweep", "action %d: in progress, lease ended %v ago", a, now.Sub(rec.LeaseUntil))
		}
	}
	r.mu.Lock()
	bodies := slices.Clone(r.bodies)
	grants := slices.Clone(r.grants)
	r.mu.Unlock()
	open := 0
	for _, b := range bodies {
		if !b.isClosed() {
			open++
		}
	}
	if open > 0 {
		r.violate("RoundTrip closes the request body", "%d of %d callers' request bodies never closed", open, len(bodies))
	}
	r.checkLimits(grants)
}

// checkLimits checks the limiter's grants against its limit and against
// the cooldowns the provider asked for.
func (r *Run) checkLimits(grants []time.Time) {
	slices.SortFunc(grants, func(a, b time.Time) int { return a.Compare(b) })
	tol := r.w.limitTolerance()
	if lim := r.s.Limit; lim > 0 {
		for i, g := range grants {
			n := 0
			for _, h := range grants[i:] {
				if h.Sub(g) >= time.Second {
					break
				}
				n++
			}
			if n > lim+tol.count {
				r.violate("the limiter grants at most the limit in any window",
					"%d grants in the second from %v, limit %d/s", n, g.Sub(r.start), lim)
				break
			}
		}
	}
	r.prov.mu.Lock()
	pauses := slices.Clone(r.prov.pauses)
	r.prov.mu.Unlock()
	for _, p := range pauses {
		n := 0
		for _, g := range grants {
			if g.After(p.at.Add(tol.time)) && g.Before(p.until.Add(-tol.time)) {
				n++
			}
		}
		if n > 0 {
			r.violate("no grant during a cooldown", "%d grants during the provider's pause %v..%v",
				n, p.at.Sub(r.start), p.until.Sub(r.start))
		}
	}
}

// limitTolerance is how far measured grants may stray from the limit: none
// in virtual time; with real time, one grant and a few milliseconds, since
// a grant is stamped after Allow returns.
func (w *World) limitTolerance() (tol struct {
	count int
	time  time.Duration
}) {
	if !w.Virtual {
		tol.count, tol.time = 1, 5*time.Millisecond
	}
	return tol
}
