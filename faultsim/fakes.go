package faultsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// errDead is what a dead process's store and network calls return: nothing
// of it reaches the store or the provider any more.
var errDead = errors.New("simulation: the process is dead")

// errLostReply is a store reply lost after the store wrote.
var errLostReply = fmt.Errorf("simulation: store reply lost: %w", context.DeadlineExceeded)

// callInfo travels in a call's context to every store call, limiter call
// and provider request the call makes, so the fakes know whose step it is.
type callInfo struct {
	action, run int
	id          int64
	proc        *simProc
	// limiterErrs and limiterRefusals count the limiter's errors and
	// refusals for this call (guarded by the run's mu).
	limiterErrs, limiterRefusals int
	// hookTime is the time racers spent on the call's goroutine (guarded
	// by the run's mu).
	hookTime time.Duration
}

type callInfoKey struct{}

func callOf(ctx context.Context) *callInfo {
	ci, _ := ctx.Value(callInfoKey{}).(*callInfo)
	return ci
}

// simProvider is the fake provider behind every process's Transport: it
// applies one effect per request it processes (deduplicating by
// Idempotency-Key when it honours keys) and counts effects per action and
// per SDK call, arrivals, and the cooldowns it asked for.
type simProvider struct {
	r       *Run
	honours bool
	mu      sync.Mutex // guards all below
	// effects and arrivals count per action; byCall counts effects per
	// SDK call (callInfo.id); inflight counts requests being processed.
	effects, arrivals, inflight map[int]int
	byCall                      map[int64]int
	keys                        map[string]bool
	// pauses are the cooldowns the provider asked for with 429.
	pauses []pause
}

type pause struct{ at, until time.Time }

// procBase is one process's network: the provider, while the process lives.
type procBase struct{ p *simProc }

func (b procBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if b.p.dead() {
		return nil, errDead
	}
	return b.p.r.prov.serve(req)
}

func (p *simProvider) serve(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	ci := callOf(ctx)
	if req.URL.Path == "/flood" {
		return answer(req, http.StatusBadRequest, nil, "bad request"), nil
	}
	if ci == nil {
		return nil, errors.New("simulation: a request without its call")
	}
	if req.Method == http.MethodGet { // a redirect hop as a GET: a read, no effect
		return p.read(req, ci.action), nil
	}
	if p.r.hook(ctx, atSend, false) {
		return nil, errDead
	}
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
	}
	p.mu.Lock()
	p.arrivals[ci.action]++
	n := p.arrivals[ci.action]
	p.inflight[ci.action]++
	p.mu.Unlock()
	defer func() { p.mu.Lock(); p.inflight[ci.action]--; p.mu.Unlock() }()
	kind := replyOK
	if rs := p.r.s.Actions[ci.action].Replies; n <= len(rs) {
		kind = rs[n-1]
	}
	key := req.Header.Get(p.r.s.keyHeader())
	if resp, err, ok := p.edge(req, ci.action, n, kind, key); ok {
		return resp, err
	}
	switch kind {
	case replyUnavailable:
		p.r.Logf("provider: action %d arrival %d: 503", ci.action, n)
		return answer(req, http.StatusServiceUnavailable, http.Header{"Retry-After": {"0"}}, "unavailable"), nil
	case replyLimited:
		p.mu.Lock()
		now := time.Now()
		p.pauses = append(p.pauses, pause{at: now, until: now.Add(time.Second)})
		p.mu.Unlock()
		p.r.Logf("provider: action %d arrival %d: 429", ci.action, n)
		return answer(req, http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}}, "slow down"), nil
	case replyLate:
		return p.late(req, ci, n, key)
	case replySlow:
		t := time.NewTimer(p.r.w.Lease / 3)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	applied := p.apply(ci, key)
	p.r.Logf("provider: action %d arrival %d: %s, applied %v", ci.action, n, kind, applied)
	if p.r.hook(ctx, atSend, true) {
		return nil, errDead
	}
	switch {
	case !applied: // a key seen before: the stored answer
		return answer(req, http.StatusCreated, nil, fmt.Sprintf(`{"order":%d}`, ci.action)), nil
	case kind == replyError:
		return answer(req, http.StatusInternalServerError, nil, "oops"), nil
	case kind == replyDrop:
		return nil, errors.New("simulation: connection reset after the provider applied")
	}
	if resp, ok := p.edgeAnswer(req, ci.action, kind); ok {
		return resp, nil
	}
	switch {
	case p.r.s.Actions[ci.action].Stream:
		return p.stream(req, ci.action), nil
	}
	return answer(req, http.StatusCreated, nil, fmt.Sprintf(`{"order":%d}`, ci.action)), nil
}

func answer(req *http.Request, status int, h http.Header, body string) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h,
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}

// lookup is what a Reconciler asking the provider by the action learns:
// applied, not applied, or unknown while a request is in flight (as a
// provider answers 409 for a key being processed).
func (p *simProvider) lookup(a int) (applied, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.effects[a] > 0, p.inflight[a] == 0
}

// simStore is one process's view of the shared ledger store: every call
// goes through the run's faults first.
type simStore struct{ p *simProc }

// do runs one store call op at pt under the faults of the call in ctx.
func (s simStore) do(ctx context.Context, pt point, op func(context.Context, ledger.Store) error) error {
	r := s.p.r
	if s.p.dead() {
		return errDead
	}
	if r.hook(ctx, pt, false) {
		return errDead
	}
	var err error
	stall := r.take(ctx, pt, false, faultStall) != nil
	start := time.Now()
	defer func() {
		if took := time.Since(start); took > r.w.Lease/3 {
			r.Logf("store: %s took %v: %v", pt, took.Round(time.Millisecond), err)
		}
	}()
	switch {
	case stall && r.w.Stall != nil:
		r.w.Stall(r)
		err = op(ctx, r.store)
	case stall:
		err = r.stalled(ctx, func(ctx context.Context) error { return op(ctx, r.store) })
	case r.w.Cut != nil:
		err = r.cut(ctx, pt, op)
	default:
		err = op(ctx, r.store)
	}
	if s.p.dead() {
		return errDead
	}
	if r.hook(ctx, pt, true) {
		return errDead
	}
	if r.w.Cut == nil && err == nil && r.take(ctx, pt, true, faultLostReply) != nil {
		r.Logf("store: %s reply lost", pt)
		return errLostReply
	}
	return err
}

// cut runs op at pt on a connection the world cuts when a commit cut or a
// lost reply strikes there, and on the shared store otherwise.
func (r *Run) cut(ctx context.Context, pt point, op func(context.Context, ledger.Store) error) error {
	c := Cut(0)
	if f := r.take(ctx, pt, false, faultCut); f != nil {
		c = f.Cut
	} else if r.take(ctx, pt, true, faultLostReply) != nil {
		c = CutAfter
	}
	if c == 0 {
		return op(ctx, r.store)
	}
	err := r.w.Cut(ctx, r, c, op)
	r.Logf("store: %s on a connection cut %s: %v", pt, c, err)
	return err
}

// doValue runs op as do does and returns its value. A stalled op may still
// run after do returned (Run.stalled lets it finish, as a store would), so
// its value is handed over under a lock, never written into the caller's
// result behind its back.
func doValue[T any](s simStore, ctx context.Context, pt point, op func(context.Context, ledger.Store) (T, error)) (T, error) {
	var mu sync.Mutex
	var v T
	err := s.do(ctx, pt, func(ctx context.Context, st ledger.Store) error {
		got, e := op(ctx, st)
		mu.Lock()
		v = got
		mu.Unlock()
		return e
	})
	mu.Lock()
	defer mu.Unlock()
	return v, err
}

func (s simStore) Reserve(ctx context.Context, req ledger.ReserveRequest) (ledger.Reservation, error) {
	if s.p.instance != "" {
		// The Transport draws its instance once per OS process; each
		// simulated process is a run of its own.
		req.Instance = s.p.instance
	}
	if s.p.sideReserve != nil {
		done := false
		s.p.sideOnce.Do(func() { done = true })
		if done { // the takeover's Reserve: outside the batch it waits in
			res, err := s.p.r.side.Reserve(ctx, req)
			s.p.r.Logf("store: %s reserve (unbatched) %s token %d: %v", req.Owner, res.Verdict, res.Token, err)
			close(s.p.sideReserve)
			return res, err
		}
	}
	res, err := doValue(s, ctx, atReserve, func(ctx context.Context, st ledger.Store) (ledger.Reservation, error) {
		res, err := st.Reserve(ctx, req)
		if err == nil {
			s.p.r.Logf("store: %s reserve %s token %d", req.Owner, res.Verdict, res.Token)
		}
		return res, err
	})
	if err == nil {
		s.p.r.granted(ctx, res.Token)
	}
	return res, err
}

func (s simStore) Renew(ctx context.Context, k ledger.Key, token int64, lease time.Duration) error {
	err := s.do(ctx, atRenew, func(ctx context.Context, st ledger.Store) error { return st.Renew(ctx, k, token, lease) })
	s.p.r.fencedDone(k, token, err)
	return err
}

func (s simStore) AddAttempt(ctx context.Context, k ledger.Key, token int64, class string) (ledger.Attempt, error) {
	a, err := doValue(s, ctx, atAttempt, func(ctx context.Context, st ledger.Store) (ledger.Attempt, error) {
		return st.AddAttempt(ctx, k, token, class)
	})
	s.p.r.fencedDone(k, token, err)
	s.p.r.resentDone("AddAttempt", k, token, err)
	return a, err
}

func (s simStore) Complete(ctx context.Context, k ledger.Key, token int64, o ledger.Outcome) error {
	err := s.do(ctx, atSettle, func(ctx context.Context, st ledger.Store) error {
		e := st.Complete(ctx, k, token, o)
		s.p.r.Logf("store: complete %s token %d: %v", k.Key, token, e)
		return e
	})
	s.p.r.fencedDone(k, token, err)
	s.p.r.resentDone("Complete", k, token, err)
	return err
}

func (s simStore) Fail(ctx context.Context, k ledger.Key, token int64, f ledger.Failure) error {
	err := s.do(ctx, atSettle, func(ctx context.Context, st ledger.Store) error {
		e := st.Fail(ctx, k, token, f)
		s.p.r.Logf("store: fail %s token %d effect %v (%s): %v", k.Key, token, f.EffectPossible, f.Reason, e)
		return e
	})
	s.p.r.fencedDone(k, token, err)
	s.p.r.resentDone("Fail", k, token, err)
	return err
}

func (s simStore) MarkSending(ctx context.Context, k ledger.Key, token int64) error {
	err := s.do(ctx, atMark, func(ctx context.Context, st ledger.Store) error {
		e := st.MarkSending(ctx, k, token)
		if e == nil {
			s.p.r.marked(k)
		}
		return e
	})
	s.p.r.fencedDone(k, token, err)
	return err
}

func (s simStore) Get(ctx context.Context, k ledger.Key) (ledger.Record, error) {
	return s.p.r.store.Get(ctx, k)
}

func (s simStore) Sweep(ctx context.Context, limit int) ([]ledger.Record, error) {
	return s.p.r.store.Sweep(ctx, limit)
}

// simLimiter is the processes' rate limiter: a limiter.Local (shared, as
// Redis would share it) whose grants are recorded, and whose store is
// unavailable during the schedule's outage, as a fail-closed Redis limiter
// is.
type simLimiter struct {
	r     *Run
	inner limiter.Limiter
	// outage: the inner limiter has no store of its own to lose, so
	// simLimiter fails its calls during the schedule's outage.
	outage bool
}

func (l simLimiter) Allow(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	r := l.r
	ci := callOf(ctx)
	if s := r.s; l.outage && s.OutageLen > 0 {
		since := time.Since(r.start)
		if since >= s.OutageFrom && since < s.OutageFrom+s.OutageLen {
			r.mu.Lock()
			if ci != nil {
				ci.limiterErrs++
			}
			r.mu.Unlock()
			return limiter.Decision{}, &limiter.UnavailableError{Op: "allow", Err: context.DeadlineExceeded}
		}
	}
	start := time.Now()
	d, err := l.inner.Allow(ctx, req)
	took := time.Since(start)
	r.mu.Lock()
	defer r.mu.Unlock()
	bound, ok := l.answerBound(ctx, start)
	if ok && !l.outage && took > bound && took <= bound+r.w.stalls.during(start, start.Add(took)) {
		r.w.excused.Add(1) // the process's own stall (stallProbe)
	} else if ok && !l.outage && took > bound {
		r.violations = append(r.violations, fmt.Sprintf(
			"a limiter answers within its Timeout and by its caller's deadline: "+
				"Allow answered after %v (bound %v: Timeout %v, fair queue %v; the process stalled %v meanwhile): %+v, %v",
			took, bound, r.w.LimiterTimeout(), r.s.FairQueue, r.w.stalls.during(start, start.Add(took)), d, err))
	}
	switch {
	case err != nil:
		if ci != nil {
			ci.limiterErrs++
		}
	case d.Allowed:
		if req.Boundary == simHost {
			r.grants = append(r.grants, time.Now())
		}
	case ci != nil:
		ci.limiterRefusals++
	}
	return d, err
}

// answerBound is how long after start Allow may answer, granted, refused
// or failed: within its Timeout (a round trip is bounded by it) plus half
// of it for the machine's slack, and never more than the world's Slack
// after the caller's deadline. The fair queue may sleep for a slot or a
// place first, so it is bounded by the deadline alone, and not at all
// without one (the Transport always gives one).
func (l simLimiter) answerBound(ctx context.Context, start time.Time) (time.Duration, bool) {
	bound, ok := l.r.w.LimiterTimeout()*3/2, !l.r.s.FairQueue
	if dl, has := ctx.Deadline(); has {
		byDeadline := max(dl.Sub(start), 0) + l.r.w.Slack
		if !ok || byDeadline < bound {
			bound, ok = byDeadline, true
		}
	}
	return bound, ok
}

func (l simLimiter) Cooldown(ctx context.Context, boundary string, until time.Time) error {
	return l.inner.Cooldown(ctx, boundary, until)
}

// trackedBody is a caller's request body that remembers being closed.
type trackedBody struct {
	io.Reader
	mu     sync.Mutex
	closed bool
}

func (b *trackedBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

func (b *trackedBody) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// stream answers 201 with a body that sends its first bytes at once and
// the rest a third of a lease later, as a server-sent event stream does.
func (p *simProvider) stream(req *http.Request, a int) *http.Response {
	pr, pw := io.Pipe()
	p.r.wg.Add(1)
	go func() {
		defer p.r.wg.Done()
		if _, err := io.WriteString(pw, "data: {\"order\":"+fmt.Sprint(a)+"}\n\n"); err != nil {
			return
		}
		t := time.NewTimer(p.r.w.Lease / 3)
		defer t.Stop()
		select {
		case <-t.C:
			io.WriteString(pw, "data: [DONE]\n\n")
			pw.Close()
		case <-req.Context().Done():
			pw.CloseWithError(req.Context().Err())
		}
	}()
	resp := answer(req, http.StatusCreated, http.Header{"Content-Type": {"text/event-stream"}, "X-Sim-Stream": {"1"}}, "")
	resp.Body, resp.ContentLength = pr, -1
	return resp
}
