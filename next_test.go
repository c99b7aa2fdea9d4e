package retrybudget_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
)

// Next reads every way a call through the Transport ends into one of four
// steps, with the Outcome it read.
func TestNext(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		header  http.Header
		method  string
		action  bool
		want    retrybudget.Step
		reason  error
		retryAt bool
	}{
		{name: "success", status: 201, method: "POST", want: retrybudget.StepDone},
		{name: "rejected", status: 400, method: "POST", want: retrybudget.StepStop, reason: retrybudget.ErrRejected},
		{name: "unkeyed POST answered 500", status: 500, method: "POST", want: retrybudget.StepHold, reason: retrybudget.ErrUncertain},
		{name: "Retry-After past MaxWait", status: 429, header: http.Header{"Retry-After": {"3600"}}, method: "GET",
			want: retrybudget.StepRetry, reason: retrybudget.ErrWaitTooLong, retryAt: true},
		{name: "GET attempts exhausted", status: 503, method: "GET", want: retrybudget.StepRetry, reason: retrybudget.ErrAttemptsExhausted, retryAt: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				for k, vs := range tt.header {
					w.Header()[k] = vs
				}
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			tr := retrybudget.New(retrybudget.Config{Base: srv.Client().Transport, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
			req, _ := http.NewRequest(tt.method, srv.URL+"/v1/things", strings.NewReader(`{}`))
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if resp != nil {
				defer resp.Body.Close()
			}
			step, o := retrybudget.Next(resp, err)
			if step != tt.want || !errors.Is(o.Reason, tt.reason) && o.Reason != tt.reason || o.RetryAt.IsZero() == tt.retryAt {
				t.Fatalf("Next = %v, reason %v, retry at %v; want %v, %v, retry at set %v", step, o.Reason, o.RetryAt, tt.want, tt.reason, tt.retryAt)
			}
		})
	}
}

// An invalid Action is a final answer, and its class says the request
// itself was refused, not that the network failed.
func TestNextStopsOnAnInvalidAction(t *testing.T) {
	tr := retrybudget.New(retrybudget.Config{})
	ctx := retrybudget.WithAction(context.Background(), retrybudget.Action{Operation: "charge"})
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://127.0.0.1:1/", nil)
	_, err := tr.RoundTrip(req)
	step, o := retrybudget.Next(nil, err)
	if step != retrybudget.StepStop || !errors.Is(o.Reason, retrybudget.ErrInvalidAction) || o.Class != retrybudget.ClassBusiness {
		t.Fatalf("Next = %v, %v, class %v; want stop, ErrInvalidAction, business", step, o.Reason, o.Class)
	}
}

// What did not come through a Transport: the worker's own error is a
// retry with the worker's backoff; a bare response is read by its status.
func TestNextWithoutAnOutcome(t *testing.T) {
	if step, o := retrybudget.Next(nil, errors.New("database down")); step != retrybudget.StepRetry || !o.RetryAt.IsZero() {
		t.Fatalf("own error: %v at %v; want retry, no time", step, o.RetryAt)
	}
	for status, want := range map[int]retrybudget.Step{200: retrybudget.StepDone, 404: retrybudget.StepStop, 503: retrybudget.StepRetry} {
		if step, _ := retrybudget.Next(&http.Response{StatusCode: status, Body: http.NoBody}, nil); step != want {
			t.Errorf("bare %d: %v; want %v", status, step, want)
		}
	}
	// A captured Outcome, from an SDK that hides the Transport's error.
	o := retrybudget.Outcome{Reason: retrybudget.ErrUncertain, MaybeApplied: true}
	if step, _ := retrybudget.Next(nil, fmt.Errorf("sdk: %w", o.Err())); step != retrybudget.StepHold {
		t.Fatalf("captured uncertain outcome: %v; want hold", step)
	}
}

// A worker reads every call with Next: done, retry at a time, stop, or
// hold for an operator.
func ExampleNext() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120") // longer than MaxWait
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{Base: srv.Client().Transport})}
	resp, err := client.Get(srv.URL + "/v1/balance")
	if resp != nil {
		defer resp.Body.Close()
	}
	switch step, o := retrybudget.Next(resp, err); step {
	case retrybudget.StepDone:
		fmt.Println("done")
	case retrybudget.StepRetry:
		fmt.Printf("retry in about %s (%s)\n", time.Until(o.RetryAt).Round(time.Minute), retrybudget.ReasonCode(o.Reason))
	case retrybudget.StepStop:
		fmt.Println("final answer:", o.StatusCode)
	case retrybudget.StepHold:
		fmt.Println("may have been applied: hold for reconciliation")
	}
	// Output: retry in about 2m0s (wait_too_long)
}

// The reasons table of docs/outcomes.md says, for every reason, its code
// and its step; both must be what ReasonCode and Next say.
func TestOutcomesTableMatchesTheCode(t *testing.T) {
	doc, err := os.ReadFile("docs/outcomes.md")
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]error{
		"ErrAttemptsExhausted": retrybudget.ErrAttemptsExhausted, "ErrDeadline": retrybudget.ErrDeadline,
		"ErrWaitTooLong": retrybudget.ErrWaitTooLong, "ErrBudgetExhausted": retrybudget.ErrBudgetExhausted,
		"ErrRateLimited": retrybudget.ErrRateLimited, "ErrLimiter": retrybudget.ErrLimiter,
		"ErrThrottled": retrybudget.ErrThrottled, "ErrUncertain": retrybudget.ErrUncertain,
		"ErrRejected": retrybudget.ErrRejected, "ErrPending": retrybudget.ErrPending,
		"ErrConflict": retrybudget.ErrConflict, "ErrLedger": retrybudget.ErrLedger,
		"ErrBodyNotReplayable": retrybudget.ErrBodyNotReplayable, "ErrInvalidAction": retrybudget.ErrInvalidAction,
		"ErrBodyUnreadable": retrybudget.ErrBodyUnreadable, "ErrRedirectNotFollowed": retrybudget.ErrRedirectNotFollowed,
	}
	seen := 0
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) != 5 || !strings.HasPrefix(cells[0], "| `Err") {
			continue
		}
		name := strings.Trim(cells[0], "| `")
		reason, ok := reasons[name]
		if !ok {
			t.Errorf("docs/outcomes.md names %s, which is no reason", name)
			continue
		}
		seen++
		o := retrybudget.Outcome{Reason: reason}
		step, _ := retrybudget.Next(nil, o.Err())
		if code := strings.Trim(cells[1], "`"); code != retrybudget.ReasonCode(reason) {
			t.Errorf("%s: the table says code %s; ReasonCode says %s", name, code, retrybudget.ReasonCode(reason))
		}
		if s := strings.Trim(cells[2], "`"); s != step.String() {
			t.Errorf("%s: the table says step %s; Next says %s", name, s, step)
		}
	}
	if seen != len(reasons) {
		t.Errorf("the table lists %d of the %d reasons", seen, len(reasons))
	}
}
