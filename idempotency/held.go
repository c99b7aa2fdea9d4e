package idempotency

import (
	"context"
	"net/http"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// heldStep returns when the last lease on one of in's steps ends, if a step
// the handler derived (WithStep) is still in progress under a live lease
// once the handler returned. The handler's own calls have ended by then,
// so the lease is another server's: typically one that died mid-request,
// whose outbound Transport lease outlives the inbound lease this request
// took over. Such a step was not called by this run (the Transport
// answered it ErrPending without sending), so the handler's failure says
// nothing about the destination.
func (g *guard) heldStep(ctx context.Context, in *inbound) (time.Time, bool) {
	in.mu.Lock()
	steps := append([]ledger.Key(nil), in.steps...)
	in.mu.Unlock()
	now := g.s.Now()
	var until time.Time
	for _, k := range steps {
		rec, err := g.s.Store.Get(ctx, k)
		if err != nil {
			// Absent, or unreadable: not known to be held. The old answer
			// (the handler's failure) stands.
			continue
		}
		if rec.State == ledger.StateInProgress && rec.LeaseUntil.After(now) && rec.LeaseUntil.After(until) {
			until = rec.LeaseUntil
		}
	}
	return until, !until.IsZero()
}

// holdUntil keeps the action owned by this request until until, when the
// step held elsewhere is free, and answers the client 409 TypePending with
// a Retry-After of that time: until then no request runs the handler
// again, and after it the next one takes the action over as a crash
// recovery would. It reports false, leaving the answer to the caller, when
// the lease could not be extended.
func (g *guard) holdUntil(ctx context.Context, w http.ResponseWriter, k ledger.Key, token int64, until time.Time) bool {
	wait := until.Sub(g.s.Now())
	// Leases are whole milliseconds; round up, so that the action is not
	// free before the step is.
	lease := (wait + time.Millisecond - 1).Truncate(time.Millisecond)
	if lease < time.Millisecond {
		return false
	}
	if err := g.s.Store.Renew(ctx, k, token, lease); err != nil {
		g.log(ctx, "renew", k, err)
		return false
	}
	pending(lease).write(w)
	return true
}

// pending is the 409 TypePending answer, to come back after retryAfter.
func pending(retryAfter time.Duration) problem {
	return problem{status: http.StatusConflict, typ: TypePending, title: "Request in progress",
		detail:     "A request with this idempotency key is still in progress; retry after the time in Retry-After to get its response.",
		retryAfter: retryAfter}
}
