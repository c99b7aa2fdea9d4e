package retrybudget

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// Answers to keyed requests (409, 503) and refusals before sending: each
// test is named after the rule it pins, and opens with the failure that
// rule prevents.

// errorReader fails every read with err.
type errorReader struct{ err error }

func (r errorReader) Read([]byte) (int, error) { return 0, r.err }

func TestRefusalsBeforeSendingAreErrors(t *testing.T) {
	// A refusal with no response is an *Error. Failure pinned:
	// ErrInvalidAction and the request-body read error came
	// back bare, though RoundTrip promises an *Error when there is no
	// response.
	readErr := errors.New("disk on fire")
	for _, tc := range []struct {
		name   string
		req    func() *http.Request
		reason error
		cause  error
	}{
		{"invalid action", func() *http.Request {
			ctx := WithAction(context.Background(), Action{Tenant: "t", Operation: "op"})
			req, _ := http.NewRequestWithContext(ctx, "POST", "http://127.0.0.1:1/", nil)
			return req
		}, ErrInvalidAction, nil},
		{"body read error", func() *http.Request {
			req, _ := http.NewRequest("POST", "http://127.0.0.1:1/", io.NopCloser(errorReader{readErr}))
			return req
		}, ErrBodyUnreadable, readErr},
		{"nil URL", func() *http.Request {
			return &http.Request{Method: "GET", Header: http.Header{}}
		}, errNilURL, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, _ := newFakeTransport(Config{})
			_, err := tr.RoundTrip(tc.req())
			e, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("error %T %v; want an *Error", err, err)
			}
			if !errors.Is(err, tc.reason) || e.Reason != tc.reason {
				t.Fatalf("error %v, Reason %v; want %v", err, e.Reason, tc.reason)
			}
			if tc.cause != nil && !errors.Is(err, tc.cause) {
				t.Fatalf("error %v does not match its cause %v", err, tc.cause)
			}
			// An invalid Action is refused as a rejection is (business:
			// retrying cannot help); the others are not-sent failures.
			wantClass := ClassNotSent
			if tc.reason == ErrInvalidAction {
				wantClass = ClassBusiness
			}
			if e.Attempts != 0 || e.Class != wantClass || e.MaybeApplied {
				t.Fatalf("outcome %+v; want nothing sent, class %v", e.Outcome, wantClass)
			}
		})
	}
}

func TestKeyed409IsNeverStoredAsTheOutcome(t *testing.T) {
	// A 409 to a keyed request is never stored as the outcome. Failure
	// pinned: a 409 answered to a keyed request was
	// a business answer, so the ledger completed the action with it and
	// every later call replayed the 409, although the provider was still
	// processing the first request under the key and applied it.
	t.Run("retried under the same key", func(t *testing.T) {
		p := newPayments(t, true)
		p.fault = func(n int) string { // the first request under the key is still running
			if n == 1 {
				return "409"
			}
			return ""
		}
		store := ledger.NewMemory(ledger.MemoryConfig{})
		tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}, KeysHonoured: true})
		resp, err := chargeTo(t, tr, p.URL, order, "x")
		if err != nil {
			t.Fatal(err)
		}
		if _, o := readAll(t, resp); resp.StatusCode != 201 || o.Attempts != 2 || o.Err() != nil {
			t.Fatalf("status %d, attempts %d, err %v; want 201 after one retry", resp.StatusCode, o.Attempts, o.Err())
		}
		if r := stateOf(t, store, order); r.State != ledger.StateCompleted || r.Outcome.Status != 201 {
			t.Fatalf("record %v %+v; want completed with 201", r.State, r.Outcome)
		}
		if effects, calls := p.total(); effects != 1 || calls != 2 {
			t.Fatalf("effects %d, calls %d; want 1, 2", effects, calls)
		}
	})
	t.Run("given up on, then sent again", func(t *testing.T) {
		p := newPayments(t, true)
		p.fault = func(n int) string {
			if n <= 2 {
				return "409"
			}
			return ""
		}
		store := ledger.NewMemory(ledger.MemoryConfig{})
		tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}, KeysHonoured: true, MaxAttempts: 2})
		resp, err := chargeTo(t, tr, p.URL, order, "x")
		if err != nil {
			t.Fatal(err)
		}
		if _, o := readAll(t, resp); resp.StatusCode != 409 || !errors.Is(o.Reason, ErrAttemptsExhausted) || !o.MaybeApplied {
			t.Fatalf("status %d, reason %v, maybe applied %v; want 409 given up on, maybe applied", resp.StatusCode, o.Reason, o.MaybeApplied)
		}
		if r := stateOf(t, store, order); r.State == ledger.StateCompleted {
			t.Fatalf("record completed with %d; a 409 in flight is not the action's answer", r.Outcome.Status)
		}
		resp, err = chargeTo(t, tr, p.URL, order, "x")
		if err != nil {
			t.Fatal(err)
		}
		if _, o := readAll(t, resp); o.Replayed || resp.StatusCode != 201 {
			t.Fatalf("next call: status %d, replayed %v; want 201 sent under the key", resp.StatusCode, o.Replayed)
		}
		if effects, _ := p.total(); effects != 1 {
			t.Fatalf("effects %d; want 1", effects)
		}
	})
}

// gateway applies every request, then answers 503 without Retry-After, as
// a load balancer does when the upstream applied the request but its
// answer was lost.
func gateway(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var effects atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		effects.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv, &effects
}

func TestDefaultClassifier503WithoutRetryAfterMayHaveBeenApplied(t *testing.T) {
	// A 503 without Retry-After may have been applied. Failure pinned: a
	// 503 without
	// Retry-After was a plain capacity answer, taken as not processed.
	now := time.Now()
	for _, tc := range []struct {
		retryAfter string
		want       bool
	}{{"", true}, {"garbage", true}, {"2", false}} {
		h := http.Header{}
		if tc.retryAfter != "" {
			h.Set("Retry-After", tc.retryAfter)
		}
		c := DefaultClassifier{}.Classify(&AttemptResult{Response: &http.Response{StatusCode: 503, Header: h, Body: http.NoBody}, Now: now})
		if c.Class != ClassCapacity || c.MaybeApplied != tc.want {
			t.Errorf("503 Retry-After %q: class %v, MaybeApplied %v; want capacity, %v", tc.retryAfter, c.Class, c.MaybeApplied, tc.want)
		}
		if c.retryable(false) == tc.want || !c.retryable(true) || c.mayHaveApplied() != tc.want {
			t.Errorf("503 Retry-After %q: retryable unkeyed %v, keyed %v, may have applied %v", tc.retryAfter, c.retryable(false), c.retryable(true), c.mayHaveApplied())
		}
	}
}

func TestDefaultClassifierKeyed409IsInProgress(t *testing.T) {
	// A 409 to a keyed request is in progress. Failure pinned: it was a
	// business answer.
	keyed := &http.Request{Header: http.Header{"X-Key": {"k"}}}
	unkeyed := &http.Request{Header: http.Header{}}
	for _, tc := range []struct {
		name       string
		req        *http.Request
		repeatable bool
		want       Class
	}{
		{"keyed, key honoured", keyed, true, ClassServer},
		{"keyed, key not honoured", keyed, false, ClassBusiness},
		{"idempotent method without a key", unkeyed, true, ClassBusiness},
	} {
		resp := &http.Response{StatusCode: 409, Header: http.Header{}, Body: http.NoBody}
		c := DefaultClassifier{KeyHeader: "X-Key"}.Classify(&AttemptResult{Request: tc.req, Response: resp, Repeatable: tc.repeatable})
		if c.Class != tc.want {
			t.Errorf("%s: class %v; want %v", tc.name, c.Class, tc.want)
		}
	}
}

func Test503OnUnkeyedPOSTIsNotRetriedWithoutRetryAfter(t *testing.T) {
	// A 503 without Retry-After on an unkeyed POST is not retried. Failure
	// pinned: a 503 on an unkeyed POST was retried
	// as capacity, and a gateway that had applied it got a second effect.
	srv, effects := gateway(t)
	tr, _ := newFakeTransport(Config{})
	resp, err := send(context.Background(), t, tr, "POST", srv.URL, "x")
	if err != nil {
		t.Fatal(err)
	}
	if o := finalOutcome(t, resp); !errors.Is(o.Reason, ErrUncertain) || !o.MaybeApplied || o.Attempts != 1 {
		t.Fatalf("reason %v, maybe applied %v, attempts %d; want ErrUncertain after one attempt", o.Reason, o.MaybeApplied, o.Attempts)
	}
	if n := effects.Load(); n != 1 {
		t.Fatalf("effects %d; want 1", n)
	}
}

// businessClassifier classes every non-2xx answer as business, as a
// custom Classifier unaware of keyed 409s might.
type businessClassifier struct{}

func (businessClassifier) Classify(a *AttemptResult) Classification {
	if a.Response == nil {
		return Classification{Class: ClassMaybeSent}
	}
	if a.Response.StatusCode < 400 {
		return Classification{Class: ClassSuccess}
	}
	return Classification{Class: ClassBusiness}
}

func TestKeyed409IsNeverStoredWhateverTheClassifier(t *testing.T) {
	// A 409 to a keyed request is never stored, whatever the Classifier.
	// Failure pinned: settling completed the action with a
	// 409 to a keyed request when the Classifier called it business.
	p := newPayments(t, true)
	p.fault = func(n int) string {
		if n == 1 {
			return "409"
		}
		return ""
	}
	store := ledger.NewMemory(ledger.MemoryConfig{})
	tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}, KeysHonoured: true, Classifier: businessClassifier{}})
	resp, err := chargeTo(t, tr, p.URL, order, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, o := readAll(t, resp); resp.StatusCode != 409 || o.Attempts != 1 {
		t.Fatalf("status %d, attempts %d; want the 409 given up on", resp.StatusCode, o.Attempts)
	}
	if r := stateOf(t, store, order); r.State != ledger.StateUncertain {
		t.Fatalf("record %v; want uncertain: the request in progress may apply it", r.State)
	}
	resp, err = chargeTo(t, tr, p.URL, order, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, o := readAll(t, resp); o.Replayed || resp.StatusCode != 201 {
		t.Fatalf("next call: status %d, replayed %v; want 201 sent again under the key", resp.StatusCode, o.Replayed)
	}
	if effects, _ := p.total(); effects != 1 {
		t.Fatalf("effects %d; want 1", effects)
	}
}
