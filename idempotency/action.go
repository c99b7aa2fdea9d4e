package idempotency

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/ledger"
)

// StepSeparator joins an inbound operation and a step name in the
// Operation of an action derived by Outbound.
const StepSeparator = " -> "

// inbound is what the middleware puts in a guarded request's context.
type inbound struct {
	action retrybudget.Action
	// generation is when the store created the action's record
	// (ledger.Record.CreatedAt): a new record under the same key, once
	// the old one expired, is a new action, and its steps are new too.
	generation time.Time
	// mu guards steps.
	mu sync.Mutex
	// steps are the actions WithStep derived, for the middleware to look
	// at once the handler returned.
	steps []retrybudget.Action
	// effect is set by MarkEffect, from the handler's goroutine or any
	// goroutine it starts, and read by the middleware once the handler
	// returned.
	effect atomic.Bool
	// atx is the action's transaction in Atomic mode, nil otherwise:
	// MarkEffect writes its mark through it.
	atx ledger.AtomicTx
}

type inboundCtxKey struct{}

// InboundFrom returns the inbound action of a request guarded by the
// middleware: its tenant, operation and idempotency key. The middleware
// also attaches it with retrybudget.WithAction, so retrybudget.ActionFrom
// (the action the Transport sends under) returns the same value, until
// WithStep replaces it with a derived one; InboundFrom keeps returning the
// inbound action even then.
func InboundFrom(ctx context.Context) (retrybudget.Action, bool) {
	in, ok := ctx.Value(inboundCtxKey{}).(*inbound)
	if !ok {
		return retrybudget.Action{}, false
	}
	return in.action, true
}

// MarkEffect tells the middleware that the handler is about to change
// something outside itself (a call to a provider without an idempotency
// key, a write to another database), so that a failure from here on (a
// 5xx, 408, 425 or 429 answer, a panic, or the server's death) is recorded
// as uncertain instead of failed, and the same key is not run again (see
// Config.RerunUncertain). A handler that answers with another status is
// completed either way, and need not call it.
//
// Without Config.Atomic the mark needs no write: the record already says
// the handler started, so a server that dies leaves the action uncertain.
// With Config.Atomic, where a server that dies leaves the action failed
// (its transaction rolled back), MarkEffect writes the mark to the store
// outside the transaction (ledger.AtomicTx.MarkEffect) before it returns,
// bounded in time. When that write fails it reports the error, wrapping
// the store's (ledger.ErrNotOwner when another request took the action
// over), and the handler must not do the effect: answer 503 instead, and
// the action stays failed, to run again. It reports ErrNoAction when ctx
// is not a guarded request's. Call it before the effect, once or more.
func MarkEffect(ctx context.Context) error {
	in, ok := ctx.Value(inboundCtxKey{}).(*inbound)
	if !ok {
		return ErrNoAction
	}
	if in.atx != nil {
		// Written even when the client has gone, as the middleware's
		// other writes are: the handler may go on to its effect.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reserveTimeout)
		defer cancel()
		if err := in.atx.MarkEffect(mctx); err != nil {
			return fmt.Errorf("idempotency: mark effect: %w", err)
		}
	}
	in.effect.Store(true)
	return nil
}

// Outbound derives the action of one outbound step from an inbound action
// and the generation of its record (ledger.Record.CreatedAt): the same
// tenant, the operation followed by StepSeparator and step, such as
// "POST /api/v1/campaign-activations -> destination", and the key followed
// by "#" and the generation in Unix microseconds.
//
// A derived action is needed when the outbound retrybudget.Transport shares
// the middleware's ledger.Store: under the inbound action itself, the
// Transport's Reserve would find the inbound record, held by the running
// request, and answer "pending". Under the derived one it gets a record of
// its own in the same store (one Redis, one Sweep), and its provider key,
// Action.IdempotencyKey, is a pure function of the business action: the
// same on every run of the handler for that inbound record, distinct for
// every other key, tenant and step. A handler run again after a failure
// (Config.RerunUncertain, or a 5xx) thus finds the provider call already
// completed and gets its stored response without calling the provider.
//
// The generation scopes a step to its inbound record: once that record
// expired (Config.Retention), a request under the same key is a new action,
// and its steps get new records and new provider keys, whatever the
// retention of the step records left behind.
//
// It reports ErrEmptyStep for an empty step.
func Outbound(a retrybudget.Action, generation time.Time, step string) (retrybudget.Action, error) {
	if step == "" {
		return retrybudget.Action{}, ErrEmptyStep
	}
	a.Operation += StepSeparator + step
	// The generation is the last "#" field, digits only, so the key and
	// the generation can always be told apart again.
	var g int64
	if !generation.IsZero() {
		g = generation.UnixMicro()
	}
	a.Key += "#" + strconv.FormatInt(g, 10)
	return a, nil
}

// WithStep returns a context carrying, for retrybudget.Transport, the
// action Outbound derives from ctx's inbound action and its record's
// generation for step. Make each
// outbound call of a guarded handler with such a context, one step name
// per distinct call. Steps always derive from the inbound action, so
// WithStep on a context WithStep returned names a sibling step, not a
// nested one.
//
// It reports ErrNoAction when ctx is not a guarded request's, and
// ErrEmptyStep for an empty step; ctx is returned unchanged with either.
func WithStep(ctx context.Context, step string) (context.Context, error) {
	in, ok := ctx.Value(inboundCtxKey{}).(*inbound)
	if !ok {
		return ctx, ErrNoAction
	}
	d, err := Outbound(in.action, in.generation, step)
	if err != nil {
		return ctx, err
	}
	in.mu.Lock()
	if !slices.Contains(in.steps, d) {
		in.steps = append(in.steps, d)
	}
	in.mu.Unlock()
	return retrybudget.WithAction(ctx, d), nil
}
