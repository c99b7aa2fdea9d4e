package retrybudget

import (
	"context"
	"net/http/httptrace"
	"sync/atomic"
)

// attemptTrace records what net/http/httptrace saw of one attempt. The
// flags are set from the transport's goroutines, possibly after RoundTrip
// returned, hence atomics.
type attemptTrace struct {
	started   atomic.Bool // GetConn fired: the base traces
	connected atomic.Bool
	writes    atomic.Int32
	// hooks set the flags, and ctx carries them to the base; both are
	// kept here so that tracing an attempt costs no allocation beyond the
	// hooks' three closures.
	hooks httptrace.ClientTrace
	ctx   traceContext
}

// context returns ctx with the attempt's trace; it is called once, on a
// new attemptTrace. When ctx carries no trace already, that context is
// tr's own (see traceContext); otherwise httptrace.WithClientTrace composes
// the caller's trace with the attempt's, so that both see every event.
func (tr *attemptTrace) context(ctx context.Context) context.Context {
	// Field by field: tr is new, and writing the whole ClientTrace would
	// pass all of its sixteen hooks through the GC's write barrier.
	tr.hooks.GetConn = func(string) { tr.started.Store(true) }
	tr.hooks.GotConn = func(httptrace.GotConnInfo) { tr.connected.Store(true) }
	tr.hooks.WroteRequest = func(httptrace.WroteRequestInfo) { tr.writes.Add(1) }
	if httptrace.ContextClientTrace(ctx) != nil {
		return httptrace.WithClientTrace(ctx, &tr.hooks)
	}
	tr.ctx = traceContext{Context: ctx, hooks: &tr.hooks}
	return &tr.ctx
}

// traceContext is its Context with hooks as the httptrace.ClientTrace, as
// httptrace.WithClientTrace would make it for a context without a trace,
// but held in the attempt's trace instead of allocated apart. Every other
// value, the deadline and the cancellation are its Context's.
type traceContext struct {
	context.Context
	hooks *httptrace.ClientTrace
}

// Value implements context.Context.
func (c *traceContext) Value(key any) any {
	if isClientTraceKey(key) {
		return c.hooks
	}
	return c.Context.Value(key)
}

// probeHooks is the only value of traceKeyProbe, a context that answers
// httptrace's key alone. httptrace keeps its key's type unexported, so
// isClientTraceKey recognises the key by asking the probe. Neither is ever
// modified.
var (
	probeHooks    = &httptrace.ClientTrace{}
	traceKeyProbe = httptrace.WithClientTrace(context.Background(), probeHooks)
)

// isClientTraceKey reports whether key is the one under which
// httptrace.ContextClientTrace looks a ClientTrace up.
func isClientTraceKey(key any) bool {
	h, _ := traceKeyProbe.Value(key).(*httptrace.ClientTrace)
	return h == probeHooks
}
