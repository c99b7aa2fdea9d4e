package retrybudget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// post sends a POST with the given headers through rt.
func post(ctx context.Context, t *testing.T, rt http.RoundTripper, url string, h http.Header) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("amount=100"))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	return rt.RoundTrip(req)
}

func TestActionKeyReplacesAnSDKsKey(t *testing.T) {
	p := newProvider(t, status(200))
	var events []AttemptEvent
	tr := New(Config{Observer: Observer{Attempt: func(e AttemptEvent) { events = append(events, e) }}})
	a := Action{Operation: "charge", Key: "order-1"}
	resp, err := post(WithAction(context.Background(), a), t, tr, p.URL, http.Header{"Idempotency-Key": {"sdk-random-1"}})
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if got := p.requests()[0].key; got != a.IdempotencyKey() {
		t.Fatalf("provider saw key %q, want the Action's", got)
	}
	if len(events) != 1 || events[0].Replaced != "sdk-random-1" || events[0].Key != a.IdempotencyKey() {
		t.Fatalf("attempt events %+v, want one replacing sdk-random-1 with the Action's key", events)
	}
}

func TestSDKResendByKeyAnsweredFromTheGiveUp(t *testing.T) {
	p := newProvider(t, status(503))
	tr, _ := newFakeTransport(Config{MaxAttempts: 2})
	h := http.Header{"Idempotency-Key": {"sdk-key-1"}}
	resp, err := post(context.Background(), t, tr, p.URL, h)
	if err != nil {
		t.Fatal(err)
	}
	first := finalOutcome(t, resp)
	resp, err = post(context.Background(), t, tr, p.URL, h) // the SDK's re-send
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	o := finalOutcome(t, resp)
	if n := len(p.requests()); n != 2 {
		t.Fatalf("%d arrivals, want the first call's 2 and none for the re-send", n)
	}
	if !o.Repeated || o.Reason != first.Reason || resp.StatusCode != 503 || string(body) != "status 503" {
		t.Fatalf("re-send answered %d %q %+v; want the give-up's 503, repeated", resp.StatusCode, body, o)
	}
	// Another key is another call.
	resp, err = post(context.Background(), t, tr, p.URL, http.Header{"Idempotency-Key": {"sdk-key-2"}})
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if n := len(p.requests()); n != 4 {
		t.Fatalf("%d arrivals, want a new call sent", n)
	}
}

func TestSDKNumberedResendOfAnUncertainPOSTIsNotSent(t *testing.T) {
	p := newProvider(t, lost)
	tr, _ := newFakeTransport(Config{})
	count := func(n string) http.Header { return http.Header{"X-Stainless-Retry-Count": {n}} }
	_, err := post(context.Background(), t, tr, p.URL, count("0"))
	if !errors.Is(err, ErrUncertain) {
		t.Fatalf("first send: %v, want ErrUncertain", err)
	}
	_, err = post(context.Background(), t, tr, p.URL, count("1"))
	var e *Error
	if !errors.As(err, &e) || !e.Repeated || !errors.Is(err, ErrUncertain) {
		t.Fatalf("re-send: %v, want the give-up's ErrUncertain, repeated", err)
	}
	if n := len(p.requests()); n != 1 {
		t.Fatalf("%d arrivals, want 1", n)
	}
	// A first send of an identical request is a new call.
	_, _ = post(context.Background(), t, tr, p.URL, count("0"))
	if n := len(p.requests()); n != 2 {
		t.Fatalf("%d arrivals, want the new call sent", n)
	}
}

// countingBudget records the Budget calls in order and allows a retry when
// allow says so.
type countingBudget struct {
	mu    sync.Mutex // guards calls
	calls []string
	allow bool
}

func (b *countingBudget) Deposit(context.Context, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, "deposit")
}

func (b *countingBudget) Withdraw(context.Context, string) budget.Decision {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, "withdraw")
	return budget.Decision{Allowed: b.allow}
}

// A numbered re-send of a call this Transport never saw (given up on by
// another process, or too long ago) is a retry: it is withdrawn from the
// Budget, never deposited, and not sent when the Budget refuses it.
func TestSDKNumberedResendOfACallGivenUpElsewhere(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("budget allows %v", allow), func(t *testing.T) {
			p := newProvider(t, status(200))
			b := &countingBudget{allow: allow}
			tr, _ := newFakeTransport(Config{Budget: b})
			resp, err := post(context.Background(), t, tr, p.URL, http.Header{"X-Stainless-Retry-Count": {"1"}})
			if got := strings.Join(b.calls, ","); got != "withdraw" {
				t.Fatalf("Budget calls %q, want one withdraw and no deposit", got)
			}
			sent := len(p.requests())
			if !allow {
				var e *Error
				if !errors.As(err, &e) || !errors.Is(err, ErrBudgetExhausted) || e.Class != ClassNotSent || e.Attempts != 0 || sent != 0 {
					t.Fatalf("refused re-send: %v, %d arrivals; want ErrBudgetExhausted, not sent, 0 attempts", err, sent)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o := finalOutcome(t, resp); o.Class != ClassSuccess || o.Attempts != 1 || sent != 1 {
				t.Fatalf("allowed re-send: %+v, %d arrivals; want sent once", o, sent)
			}
		})
	}
}

func TestRoutesInheritTheParentsGates(t *testing.T) {
	lim, err := limiter.NewLocal(limiter.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	store := ledger.NewMemory(ledger.MemoryConfig{})
	rec := func(context.Context, ledger.Record) (ledger.Resolution, error) { return ledger.Resolution{}, nil }
	boundary := limiter.Fixed("acct")
	unlimited := budget.Unlimited{}
	th := budget.NewThrottle(budget.ThrottleConfig{})
	tr := New(Config{Ledger: LedgerConfig{Store: store, Owner: "w1", Reconciler: rec}, Limiter: lim, Boundary: boundary,
		Budget: unlimited, Throttle: th, Routes: []Route{{Host: "a.example"}, {Host: "b.example", Config: Config{Budget: budget.NewLocal(budget.Config{})}}}})
	c := tr.routes[0].p.cfg
	if c.Ledger.Store != store || c.Ledger.Owner != "w1" || c.Ledger.Reconciler == nil || c.Limiter != lim || c.Boundary == nil ||
		c.Budget != unlimited || c.Throttle != th || c.Overload != tr.cfg.Overload {
		t.Fatalf("route config %+v does not inherit the parent's gates", c)
	}
	if _, own := tr.routes[1].p.cfg.Budget.(*budget.Local); !own {
		t.Fatal("a route's own Budget was replaced by the parent's")
	}
}

func TestRouteAt(t *testing.T) {
	r := Route{Name: "paypal", Host: "api-m.paypal.com", PathPrefix: "/v2/", Auxiliary: []string{"/v1/oauth2/token"}}
	got := r.At("http://127.0.0.1:8080/mock/")
	if got.Host != "127.0.0.1:8080" || got.PathPrefix != "/mock/v2/" || got.Auxiliary[0] != "/mock/v1/oauth2/token" || got.Name != "paypal" {
		t.Fatalf("At: %+v", got)
	}
	if r.Auxiliary[0] != "/v1/oauth2/token" {
		t.Fatal("At changed the original's Auxiliary")
	}
	if got := (Route{Host: "api.stripe.com"}).At("localhost:9"); got.Host != "localhost:9" || got.Name != "api.stripe.com" {
		t.Fatalf("At(host:port): %+v", got)
	}
}

func TestAuxiliaryPathCarriesNoAction(t *testing.T) {
	p := newProvider(t, status(200))
	u, _ := url.Parse(p.URL)
	var verdicts []ledger.Verdict
	tr := New(Config{
		Ledger:   LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})},
		Observer: Observer{Ledger: func(e LedgerEvent) { verdicts = append(verdicts, e.Verdict) }},
		Routes:   []Route{{Name: "p", Host: u.Host, Auxiliary: []string{"/token"}}},
	})
	a := Action{Operation: "order", Key: "1"}
	ctx := WithAction(context.Background(), a)
	for _, path := range []string{"/token", "/orders"} {
		resp, err := post(ctx, t, tr, p.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if o := finalOutcome(t, resp); o.Route != "p" {
			t.Errorf("%s: Route %q", path, o.Route)
		}
	}
	reqs := p.requests()
	if reqs[0].key == a.IdempotencyKey() || reqs[1].key != a.IdempotencyKey() {
		t.Fatalf("keys %q, %q: want the Action's on the order only", reqs[0].key, reqs[1].key)
	}
	if len(verdicts) != 1 || verdicts[0] != ledger.VerdictCreated {
		t.Fatalf("ledger verdicts %v, want one record, for the order", verdicts)
	}
}

func TestMaxWaitBoundsAllOfACallsWaits(t *testing.T) {
	p := newProvider(t, status(503, "Retry-After", "40"))
	tr, fc := newFakeTransport(Config{MaxAttempts: 5, Budget: budget.Unlimited{}})
	resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	o := finalOutcome(t, resp)
	var slept time.Duration
	for _, d := range fc.Sleeps() {
		slept += d
	}
	if !errors.Is(o.Reason, ErrWaitTooLong) || o.Attempts != 2 || slept > DefaultMaxWait {
		t.Fatalf("outcome %+v after sleeping %v; want ErrWaitTooLong after 2 attempts, within MaxWait", o, slept)
	}
}

func TestCaptureOutcomeKeepsTheLatest(t *testing.T) {
	p := newProvider(t, status(200))
	tr := New(Config{})
	ctx, out := CaptureOutcome(context.Background())
	if _, ok := out.Last(); ok {
		t.Fatal("an outcome before any call")
	}
	for range maxCaptured + 3 {
		resp, err := send(ctx, t, tr, "GET", p.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		finalOutcome(t, resp)
	}
	if o, ok := out.Last(); !ok || o.StatusCode != 200 || len(out.All()) != maxCaptured {
		t.Fatalf("Last %+v, %d kept", o, len(out.All()))
	}
}

func TestOmitKeySendsNoKeyOfItsOwn(t *testing.T) {
	p := newProvider(t, status(200))
	tr := New(Config{OmitKey: true})
	a := Action{Operation: "msg", Key: "1"}
	for _, tt := range []struct {
		ctx  context.Context
		h    http.Header
		want string
	}{
		{context.Background(), nil, ""},
		{WithAction(context.Background(), a), nil, ""},
		{WithAction(context.Background(), a), http.Header{"Idempotency-Key": {"sdk"}}, a.IdempotencyKey()},
	} {
		resp, err := post(tt.ctx, t, tr, p.URL, tt.h)
		if err != nil {
			t.Fatal(err)
		}
		finalOutcome(t, resp)
		reqs := p.requests()
		if got := reqs[len(reqs)-1].key; got != tt.want {
			t.Errorf("key %q, want %q", got, tt.want)
		}
	}
}
