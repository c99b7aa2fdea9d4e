package retrybudget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// tailProvider is a provider inside a synctest bubble: request number n
// (from 0, in order of arrival) waits latency(n) on the bubble's clock,
// then answers status(n) (200 when nil). It counts what reached it, what
// was cancelled and which response bodies were closed.
type tailProvider struct {
	latency func(n int) time.Duration
	status  func(n int) int
	// deaf ignores cancellation: the answer comes anyway, as from a Base
	// that does not watch the request's context.
	deaf bool
	// warming answers at once, and leaves no trace (see warm).
	warming bool

	mu       sync.Mutex // guards the fields below
	arrivals []time.Time
	methods  []string
	canceled []int // arrival numbers that saw their context end
	closed   []int // arrival numbers whose response body was closed
}

func (p *tailProvider) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	if p.warming {
		p.mu.Unlock()
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Request: req, Body: http.NoBody}, nil
	}
	n := len(p.arrivals)
	p.arrivals = append(p.arrivals, time.Now())
	p.methods = append(p.methods, req.Method)
	p.mu.Unlock()
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	wait := time.NewTimer(p.latency(n))
	defer wait.Stop()
	if p.deaf {
		<-wait.C
	} else {
		select {
		case <-wait.C:
		case <-req.Context().Done():
			p.mu.Lock()
			p.canceled = append(p.canceled, n)
			p.mu.Unlock()
			return nil, req.Context().Err()
		}
	}
	status := http.StatusOK
	if p.status != nil {
		status = p.status(n)
	}
	return &http.Response{StatusCode: status, Header: http.Header{}, Request: req,
		Body: &providerBody{p: p, n: n, r: strings.NewReader(fmt.Sprintf("answer %d", n))}}, nil
}

// warm has tr make one call that p answers at once, so that the
// destination has answered (only such a destination is hedged); p and ev,
// when not nil, forget it.
func (p *tailProvider) warm(tr http.RoundTripper, ev *events) {
	p.warmAt(tr, "http://api.example/items/0", ev)
}

// warmAt is warm with a call to url.
func (p *tailProvider) warmAt(tr http.RoundTripper, url string, ev *events) {
	p.mu.Lock()
	p.warming = true
	p.mu.Unlock()
	callOnce(tr, get(url))
	p.mu.Lock()
	p.warming = false
	p.mu.Unlock()
	if ev != nil {
		ev.mu.Lock()
		ev.attempts, ev.budget, ev.retries, ev.limited = nil, nil, nil, nil
		ev.mu.Unlock()
	}
}

func (p *tailProvider) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.arrivals)
}

// arrivedAt returns when arrival n came, since start.
func (p *tailProvider) arrivedAt(n int, start time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.arrivals[n].Sub(start)
}

func (p *tailProvider) report() (canceled, closed []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.canceled...), append([]int(nil), p.closed...)
}

// providerBody is a response body that tells its provider when it is
// closed.
type providerBody struct {
	p *tailProvider
	n int
	r io.Reader
}

func (b *providerBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *providerBody) Close() error {
	b.p.mu.Lock()
	b.p.closed = append(b.p.closed, b.n)
	b.p.mu.Unlock()
	return nil
}

// slowFirst is a latency: the first arrival takes first, every later one
// rest.
func slowFirst(first, rest time.Duration) func(int) time.Duration {
	return func(n int) time.Duration {
		if n == 0 {
			return first
		}
		return rest
	}
}

// events records what the Observer saw.
type events struct {
	mu       sync.Mutex // guards the slices
	attempts []AttemptEvent
	budget   []BudgetEvent
	retries  []RetryEvent
	limited  []LimitEvent
}

func (e *events) observer() Observer {
	return Observer{
		Attempt: func(ev AttemptEvent) { e.mu.Lock(); e.attempts = append(e.attempts, ev); e.mu.Unlock() },
		Budget:  func(ev BudgetEvent) { e.mu.Lock(); e.budget = append(e.budget, ev); e.mu.Unlock() },
		Retry:   func(ev RetryEvent) { e.mu.Lock(); e.retries = append(e.retries, ev); e.mu.Unlock() },
		Limited: func(ev LimitEvent) { e.mu.Lock(); e.limited = append(e.limited, ev); e.mu.Unlock() },
	}
}

// called is what one call through a Transport returned.
type called struct {
	out     Outcome
	status  int
	body    string
	err     error
	elapsed time.Duration
}

// callOnce sends req through rt and reads and closes the answer.
func callOnce(rt http.RoundTripper, req *http.Request) called {
	start := time.Now()
	resp, err := rt.RoundTrip(req)
	c := called{err: err, elapsed: time.Since(start)}
	var e *Error
	switch {
	case errors.As(err, &e):
		c.out = e.Outcome
	case resp != nil:
		c.out, _ = OutcomeOf(resp)
		c.status = resp.StatusCode
		b, _ := io.ReadAll(resp.Body)
		c.body = string(b)
		resp.Body.Close()
	}
	return c
}

func get(url string) *http.Request {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	return req
}

// TestHedgeFiresOnlyAfterTheDelay: nothing but the first attempt reaches
// the provider before HedgeDelay; the hedge arrives exactly at it, and its
// answer is taken while the first attempt is still out.
func TestHedgeFiresOnlyAfterTheDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &tailProvider{latency: slowFirst(time.Second, 20*time.Millisecond)}
		tr := New(Config{Base: p, HedgeDelay: 50 * time.Millisecond})
		p.warm(tr, nil)
		start := time.Now()
		done := make(chan called)
		go func() { done <- callOnce(tr, get("http://api.example/items/1")) }()

		time.Sleep(50*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		if n := p.count(); n != 1 {
			t.Fatalf("%d arrivals just before the delay; want only the first attempt", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n := p.count(); n != 2 {
			t.Fatalf("%d arrivals at the delay; want the hedge too", n)
		}
		c := <-done
		if c.err != nil || c.status != http.StatusOK || c.body != "answer 1" {
			t.Fatalf("got %d %q, %v; want the hedge's 200", c.status, c.body, c.err)
		}
		if c.elapsed != 70*time.Millisecond {
			t.Errorf("the call took %v; want 70ms (the delay and the hedge's 20ms)", c.elapsed)
		}
		if c.out.Attempts != 2 || !c.out.Hedged || c.out.Reason != nil {
			t.Errorf("Outcome: %d attempts, hedged %v, reason %v; want 2, true, nil", c.out.Attempts, c.out.Hedged, c.out.Reason)
		}
		if at := p.arrivedAt(1, start); at != 50*time.Millisecond {
			t.Errorf("the hedge arrived at %v; want 50ms", at)
		}
	})
}

// TestHedgeNotSentWhenTheFirstAnswersInTime: an answer before the delay
// leaves the provider with one request, then and later.
func TestHedgeNotSentWhenTheFirstAnswersInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &tailProvider{latency: slowFirst(49*time.Millisecond, time.Millisecond)}
		tr := New(Config{Base: p, HedgeDelay: 50 * time.Millisecond})
		p.warm(tr, nil)
		c := callOnce(tr, get("http://api.example/items/1"))
		time.Sleep(time.Second)
		synctest.Wait()
		if n := p.count(); n != 1 || c.out.Attempts != 1 || c.out.Hedged {
			t.Fatalf("%d arrivals, Outcome %d attempts, hedged %v; want 1, 1, false", n, c.out.Attempts, c.out.Hedged)
		}
	})
}

// TestHedgeOnlyForIdempotentRequestsWithoutAKey: a hedge goes only for an
// idempotent method the policy covers, and never for a request that sends
// a key (a keyed POST above all: two copies in flight are not deduplicated)
// or that has a ledger record.
func TestHedgeOnlyForIdempotentRequestsWithoutAKey(t *testing.T) {
	withAction := func(req *http.Request) *http.Request {
		return req.WithContext(WithAction(req.Context(), Action{Tenant: "acme", Operation: "read", Key: "order-1"}))
	}
	cases := []struct {
		name   string
		method string
		cfg    Config
		prep   func(*http.Request) *http.Request
		want   int // arrivals
	}{
		{name: "GET", method: "GET", want: 2},
		{name: "HEAD", method: "HEAD", want: 2},
		{name: "OPTIONS", method: "OPTIONS", want: 2},
		{name: "PUT", method: "PUT", want: 1},
		{name: "DELETE", method: "DELETE", want: 1},
		{name: "PUT with HedgeWrites", method: "PUT", cfg: Config{HedgeWrites: true}, want: 2},
		{name: "DELETE with HedgeWrites", method: "DELETE", cfg: Config{HedgeWrites: true}, want: 2},
		{name: "POST", method: "POST", cfg: Config{HedgeWrites: true}, want: 1},
		{name: "PATCH", method: "PATCH", cfg: Config{HedgeWrites: true}, want: 1},
		{name: "keyed POST", method: "POST", cfg: Config{HedgeWrites: true, KeysHonoured: true},
			prep: func(r *http.Request) *http.Request { r.Header.Set("Idempotency-Key", "k-1"); return r }, want: 1},
		{name: "POST under an Action", method: "POST", cfg: Config{KeysHonoured: true}, prep: withAction, want: 1},
		{name: "keyed GET", method: "GET",
			prep: func(r *http.Request) *http.Request { r.Header.Set("Idempotency-Key", "k-1"); return r }, want: 1},
		{name: "keyed PUT", method: "PUT", cfg: Config{HedgeWrites: true},
			prep: func(r *http.Request) *http.Request { r.Header.Set("Idempotency-Key", "k-1"); return r }, want: 1},
		{name: "GET under an Action with a ledger", method: "GET",
			cfg: Config{Routes: []Route{{Host: "api.example", ActionOnSafeMethods: true, Config: Config{OmitKey: true, HedgeDelay: 50 * time.Millisecond,
				Ledger: LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})}}}}}, prep: withAction, want: 1},
		{name: "GET under an Action with a ledger, safe methods outside the Action", method: "GET",
			cfg: Config{OmitKey: true, Ledger: LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})}}, prep: withAction, want: 2},
		{name: "GET under an Action without key or ledger", method: "GET", cfg: Config{OmitKey: true}, prep: withAction, want: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &tailProvider{latency: slowFirst(time.Second, 20*time.Millisecond)}
				cfg := tc.cfg
				cfg.Base, cfg.HedgeDelay = p, 50*time.Millisecond
				tr := New(cfg)
				p.warm(tr, nil)
				var body io.Reader
				if tc.method == "PUT" || tc.method == "POST" || tc.method == "PATCH" {
					body = strings.NewReader(`{"qty":1}`)
				}
				req, _ := http.NewRequest(tc.method, "http://api.example/items/1", body)
				if tc.prep != nil {
					req = tc.prep(req)
				}
				c := callOnce(tr, req)
				synctest.Wait()
				if n := p.count(); n != tc.want {
					t.Fatalf("%d arrivals; want %d", n, tc.want)
				}
				if hedged := tc.want == 2; c.out.Hedged != hedged || c.out.Attempts != tc.want {
					t.Errorf("Outcome: %d attempts, hedged %v; want %d, %v", c.out.Attempts, c.out.Hedged, tc.want, hedged)
				}
			})
		})
	}
}

// TestHedgeLoserIsCanceledAndClosed: the copy that did not answer first is
// cancelled (its context ends), its response, if one comes anyway, is
// closed; it is reported as cancelled, not failed, and never retried.
func TestHedgeLoserIsCanceledAndClosed(t *testing.T) {
	cases := []struct {
		name      string
		latency   func(int) time.Duration
		deaf      bool
		winner    int  // arrival number whose answer the caller gets
		loserIsHe bool // the loser is the hedge
	}{
		{name: "first attempt still out", latency: slowFirst(time.Second, 20*time.Millisecond), winner: 1},
		{name: "hedge still out", latency: slowFirst(60*time.Millisecond, time.Second), winner: 0, loserIsHe: true},
		{name: "first attempt answers anyway", latency: slowFirst(100*time.Millisecond, 20*time.Millisecond), deaf: true, winner: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &tailProvider{latency: tc.latency, deaf: tc.deaf}
				var ev events
				tr := New(Config{Base: p, HedgeDelay: 50 * time.Millisecond, Observer: ev.observer()})
				p.warm(tr, &ev)
				c := callOnce(tr, get("http://api.example/items/1"))
				if c.err != nil || c.body != fmt.Sprintf("answer %d", tc.winner) {
					t.Fatalf("got %q, %v; want arrival %d's answer", c.body, c.err, tc.winner)
				}
				time.Sleep(5 * time.Second)
				synctest.Wait()
				loser := 1 - tc.winner
				canceled, closed := p.report()
				if tc.deaf {
					if len(canceled) != 0 || len(closed) != 2 {
						t.Errorf("canceled %v, closed %v; want both bodies closed", canceled, closed)
					}
				} else if len(canceled) != 1 || canceled[0] != loser || len(closed) != 1 || closed[0] != tc.winner {
					t.Errorf("canceled %v, closed %v; want arrival %d cancelled and %d's body closed", canceled, closed, loser, tc.winner)
				}
				if n := p.count(); n != 2 {
					t.Errorf("%d arrivals; want 2: the loser is not retried", n)
				}
				if len(ev.retries) != 0 || c.out.Attempts != 2 || !c.out.Hedged || c.out.Reason != nil {
					t.Errorf("%d retries, Outcome %+v; want no retry, 2 attempts of which 1 hedge, success", len(ev.retries), c.out)
				}
				if len(ev.attempts) != 2 {
					t.Fatalf("%d attempt events; want 2", len(ev.attempts))
				}
				lost, won := ev.attempts[0], ev.attempts[1]
				if !lost.Canceled || lost.Hedge != tc.loserIsHe || lost.Attempt != 1 || !errors.Is(lost.Err, context.Canceled) {
					t.Errorf("loser's event %+v; want attempt 1, Canceled, Hedge %v", lost, tc.loserIsHe)
				}
				if won.Canceled || won.Hedge == tc.loserIsHe || won.Attempt != 2 || won.Class != ClassSuccess {
					t.Errorf("winner's event %+v; want attempt 2, a success, Hedge %v", won, !tc.loserIsHe)
				}
			})
		})
	}
}

// TestHedgeCanceledLoserIsNoFailure: after a race whose loser was
// cancelled, the destination is not taken as failing: the next slow call
// is hedged again.
func TestHedgeCanceledLoserIsNoFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &tailProvider{latency: func(n int) time.Duration {
			if n%2 == 0 {
				return time.Second // every first attempt
			}
			return 20 * time.Millisecond
		}}
		tr := New(Config{Base: p, HedgeDelay: 50 * time.Millisecond})
		p.warm(tr, nil)
		for i := range 3 {
			if c := callOnce(tr, get("http://api.example/items/1")); !c.out.Hedged || c.elapsed != 70*time.Millisecond {
				t.Fatalf("call %d: hedged %v in %v; want hedged in 70ms", i, c.out.Hedged, c.elapsed)
			}
		}
	})
}

// TestHedgeSpendsTheRetryBudget: every hedge withdraws one retry credit; a
// refused withdrawal sends no hedge, and the call waits for its first
// attempt.
func TestHedgeSpendsTheRetryBudget(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprintf("allowed=%v", allow), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &tailProvider{latency: slowFirst(time.Second, 20*time.Millisecond)}
				b := &countingBudget{allow: allow}
				var ev events
				tr := New(Config{Base: p, HedgeDelay: 50 * time.Millisecond, Budget: b, Observer: ev.observer()})
				p.warm(tr, &ev)
				b.calls = nil
				c := callOnce(tr, get("http://api.example/items/1"))
				want, took := 2, 70*time.Millisecond
				if !allow {
					want, took = 1, time.Second
				}
				if w := slices.Index(b.calls, "withdraw"); w < 0 || slices.Contains(b.calls[w+1:], "withdraw") ||
					len(ev.budget) != 1 || ev.budget[0].Decision.Allowed != allow {
					t.Errorf("budget calls %v, budget events %+v; want one withdrawal, allowed %v", b.calls, ev.budget, allow)
				}
				if n := p.count(); n != want || c.elapsed != took || c.out.Reason != nil {
					t.Errorf("%d arrivals in %v, reason %v; want %d in %v, success", n, c.elapsed, c.out.Reason, want, took)
				}
			})
		})
	}
}

// TestHedgeWaitsOnTheLimiter: a hedge asks the limiter like any attempt
// and waits as it is told; when the first attempt answers during that
// wait, no hedge is sent.
func TestHedgeWaitsOnTheLimiter(t *testing.T) {
	cases := []struct {
		name     string
		first    time.Duration // the first attempt's latency
		wait     time.Duration // the limiter's wait for the hedge
		arrivals int
		hedgeAt  time.Duration
		took     time.Duration
	}{
		{name: "hedge waits its turn", first: time.Second, wait: 30 * time.Millisecond, arrivals: 2,
			hedgeAt: 80 * time.Millisecond, took: 100 * time.Millisecond},
		{name: "first answers during the wait", first: 200 * time.Millisecond, wait: 500 * time.Millisecond, arrivals: 1,
			took: 200 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &tailProvider{latency: slowFirst(tc.first, 20*time.Millisecond)}
				// The warm-up, the first attempt, the hedge told to wait, the hedge.
				lim := &scriptedLimiter{decisions: []limiter.Decision{{Allowed: true}, {Allowed: true}, {RetryAfter: tc.wait}, {Allowed: true}}}
				var ev events
				tr := New(Config{Base: p, HedgeDelay: 50 * time.Millisecond, Limiter: lim, Observer: ev.observer()})
				p.warm(tr, &ev)
				start := time.Now()
				c := callOnce(tr, get("http://api.example/items/1"))
				if n := p.count(); n != tc.arrivals || c.elapsed != tc.took {
					t.Fatalf("%d arrivals in %v; want %d in %v", n, c.elapsed, tc.arrivals, tc.took)
				}
				if tc.arrivals == 2 {
					if at := p.arrivedAt(1, start); at != tc.hedgeAt {
						t.Errorf("the hedge arrived at %v; want %v", at, tc.hedgeAt)
					}
					if n := len(lim.asked); n != 4 {
						t.Errorf("%d limiter decisions; want 4", n)
					}
				}
				if len(ev.limited) != 1 || ev.limited[0].Wait != tc.wait {
					t.Errorf("limit events %+v; want one wait of %v", ev.limited, tc.wait)
				}
			})
		})
	}
}

// TestHedgeCountsAgainstMaxAttempts: a hedge is an attempt: with one
// allowed there is none, and with two a hedged pair that fails ends the
// call without a third.
func TestHedgeCountsAgainstMaxAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &tailProvider{latency: slowFirst(time.Second, 20*time.Millisecond)}
		tr := New(Config{Base: p, HedgeDelay: 50 * time.Millisecond, MaxAttempts: -1})
		p.warm(tr, nil)
		if c := callOnce(tr, get("http://api.example/items/1")); p.count() != 1 || c.out.Attempts != 1 {
			t.Errorf("MaxAttempts 1: %d arrivals, %d attempts; want 1, 1", p.count(), c.out.Attempts)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		p := &tailProvider{latency: slowFirst(100*time.Millisecond, 100*time.Millisecond),
			status: func(int) int { return http.StatusServiceUnavailable }}
		var ev events
		tr := New(Config{Base: p, HedgeDelay: 50 * time.Millisecond, MaxAttempts: 2, Observer: ev.observer()})
		p.warm(tr, &ev)
		c := callOnce(tr, get("http://api.example/items/1"))
		time.Sleep(time.Second)
		synctest.Wait()
		if n := p.count(); n != 2 || c.out.Attempts != 2 || !c.out.Hedged || !errors.Is(c.out.Reason, ErrAttemptsExhausted) {
			t.Errorf("MaxAttempts 2: %d arrivals, Outcome %+v; want 2 arrivals, 2 attempts, ErrAttemptsExhausted", n, c.out)
		}
		if len(ev.attempts) != 2 || ev.attempts[0].Attempt != 1 || ev.attempts[1].Attempt != 2 ||
			ev.attempts[0].Class != ClassCapacity || ev.attempts[1].Class != ClassCapacity {
			t.Errorf("attempt events %+v; want attempts 1 and 2, both capacity", ev.attempts)
		}
	})
}

// TestHedgeOnlyWhileTheDestinationAnswers: a destination is hedged only
// while its last attempt got an answer: not before it is heard from, and
// not after an attempt failed, until one gets an answer again.
func TestHedgeOnlyWhileTheDestinationAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := []struct {
			latency time.Duration
			status  int
		}{
			{time.Second, http.StatusOK},                           // call 1: slow, not hedged (never heard from)
			{10 * time.Millisecond, http.StatusServiceUnavailable}, // call 2 fails
			{10 * time.Millisecond, http.StatusServiceUnavailable}, // and its retry
			{time.Second, http.StatusOK},                           // call 3: slow, not hedged
			{time.Second, http.StatusOK},                           // call 4: slow, hedged (3 answered)
			{20 * time.Millisecond, http.StatusOK},                 // its hedge
		}
		p := &tailProvider{latency: func(n int) time.Duration { return script[n].latency },
			status: func(n int) int { return script[n].status }}
		tr := New(Config{Base: p, HedgeDelay: 50 * time.Millisecond, MaxAttempts: 2})
		for i, want := range []bool{false, false, false, true} {
			if c := callOnce(tr, get("http://api.example/items/1")); c.out.Hedged != want {
				t.Fatalf("call %d: hedged %v; want %v", i+1, c.out.Hedged, want)
			}
		}
		if n := p.count(); n != 6 {
			t.Errorf("%d arrivals; want 6", n)
		}
	})
}

// TestHedgeAfterThePercentile: with HedgePercentile, a destination is not
// hedged until it has 32 latencies; then a slow first attempt is hedged
// after the percentile of them, or after HedgeDelay when that is longer.
func TestHedgeAfterThePercentile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		floor time.Duration
		took  time.Duration // the slow call
	}{
		{name: "percentile", took: 20 * time.Millisecond},
		{name: "floor above it", floor: 40 * time.Millisecond, took: 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				slow := -1 // arrival number of the slow first attempt
				p := &tailProvider{latency: func(n int) time.Duration {
					if n == slow || n == 3 {
						return 10 * time.Second
					}
					return 10 * time.Millisecond
				}}
				tr := New(Config{Base: p, HedgePercentile: 95, HedgeDelay: tc.floor})
				// Call 4 (arrival 3) is slow before the destination has 32
				// latencies: it is not hedged.
				for i := range hedgeMinSamples {
					if c := callOnce(tr, get("http://api.example/items/1")); c.out.Hedged {
						t.Fatalf("call %d: hedged before %d latencies were known", i+1, hedgeMinSamples)
					}
				}
				slow = p.count()
				c := callOnce(tr, get("http://api.example/items/1"))
				// The latencies are 10ms, one in 32 is 10s: the 95th
				// percentile is within 10ms's bucket, [9.728ms, 10.24ms),
				// and the hedge takes 10ms more.
				if !c.out.Hedged || c.elapsed < tc.took || c.elapsed > tc.took+240*time.Microsecond {
					t.Errorf("slow call: hedged %v in %v; want hedged in %v to %v", c.out.Hedged, c.elapsed, tc.took, tc.took+240*time.Microsecond)
				}
			})
		})
	}
}

// TestHedgeCallerCancelEndsBothCopies: the caller's context ending during
// a race ends both copies, and the call reports it, with nothing left
// running; the destination counts as failing.
func TestHedgeCallerCancelEndsBothCopies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &tailProvider{latency: slowFirst(time.Second, time.Second)}
		tr := New(Config{Base: p, HedgeDelay: 50 * time.Millisecond})
		p.warm(tr, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/items/1", nil)
		c := callOnce(tr, req)
		synctest.Wait()
		canceled, _ := p.report()
		if !errors.Is(c.err, context.DeadlineExceeded) || c.elapsed != 80*time.Millisecond || len(canceled) != 2 {
			t.Errorf("got %v after %v, %d copies cancelled; want the deadline at 80ms, both cancelled", c.err, c.elapsed, len(canceled))
		}
		// A provider that holds its callers past their deadlines is failing
		// as far as hedging goes: the next call is not hedged.
		if c := callOnce(tr, get("http://api.example/items/1")); c.out.Hedged || p.count() != 3 {
			t.Errorf("after the deadline: hedged %v, %d arrivals; want no hedge, 3 arrivals", c.out.Hedged, p.count())
		}
	})
}

// TestHedgeTrackerIsBounded: the latencies kept per destination and the
// number of destinations are capped, the least recently seen destination
// giving way, and a destination's percentile follows its latencies.
func TestHedgeTrackerIsBounded(t *testing.T) {
	h := newHedging(0, 95, false)
	for i := range 10 * hedgeDestinations {
		h.observe(fmt.Sprintf("host-%d", i), ClassSuccess, time.Millisecond, true)
		h.observe("busy", ClassSuccess, time.Millisecond, true)
	}
	if n := len(h.dests); n != hedgeDestinations {
		t.Fatalf("%d destinations tracked; want the cap %d", n, hedgeDestinations)
	}
	if _, ok := h.dests["busy"]; !ok {
		t.Errorf("the destination seen on every call was evicted")
	}
	if _, ok := h.dests["host-0"]; ok {
		t.Errorf("the destination seen least recently is still tracked")
	}

	e := h.dests["busy"]
	for i := range 100_000 {
		d := 10 * time.Millisecond
		if i%20 == 0 {
			d = 200 * time.Millisecond // the slowest 5 %
		}
		e.add(d)
	}
	if e.total >= hedgeWindow {
		t.Errorf("%d latencies held; want fewer than %d", e.total, hedgeWindow)
	}
	for _, q := range []struct {
		p        float64
		low, top time.Duration
	}{{50, 9728 * time.Microsecond, 10240 * time.Microsecond}, {90, 9728 * time.Microsecond, 10240 * time.Microsecond},
		{99, 196608 * time.Microsecond, 204800 * time.Microsecond}} {
		if got := e.quantile(q.p); got < q.low || got > q.top {
			t.Errorf("p%v = %v; want within [%v, %v]", q.p, got, q.low, q.top)
		}
	}
}

// TestHedgeOnlyWhereARouteTurnsItOn: a route hedges when its own Config
// says so, and never inherits hedging from the Transport's Config.
func TestHedgeOnlyWhereARouteTurnsItOn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    Config
		host   string
		hedged bool
	}{
		{name: "the route's own", cfg: Config{Routes: []Route{{Host: "slow.example", Config: Config{HedgeDelay: 50 * time.Millisecond}}}},
			host: "slow.example", hedged: true},
		{name: "another host", cfg: Config{Routes: []Route{{Host: "slow.example", Config: Config{HedgeDelay: 50 * time.Millisecond}}}},
			host: "other.example"},
		{name: "not inherited", cfg: Config{HedgeDelay: 50 * time.Millisecond, Routes: []Route{{Host: "slow.example"}}},
			host: "slow.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &tailProvider{latency: slowFirst(time.Second, 20*time.Millisecond)}
				cfg := tc.cfg
				cfg.Base = p
				tr := New(cfg)
				// The destination answers once, so that only the policy decides.
				p.warmAt(tr, "http://"+tc.host+"/items/0", nil)
				c := callOnce(tr, get("http://"+tc.host+"/items/1"))
				if c.out.Hedged != tc.hedged || p.count() != map[bool]int{false: 1, true: 2}[tc.hedged] {
					t.Errorf("hedged %v with %d arrivals; want hedged %v", c.out.Hedged, p.count(), tc.hedged)
				}
			})
		})
	}
}
