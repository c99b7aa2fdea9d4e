package retrybudget_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/retrybudget/retrybudget"
)

// flaky is an offline stand-in for a provider: it answers with the given
// statuses in turn and records the idempotency keys it saw.
type flaky struct {
	statuses []int
	header   http.Header
	keys     []string
}

func (f *flaky) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	f.keys = append(f.keys, req.Header.Get("Idempotency-Key"))
	code := f.statuses[min(len(f.keys), len(f.statuses))-1]
	h := f.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

func Example() {
	provider := &flaky{statuses: []int{503, 429, 201}}
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Base:      provider,
		BaseDelay: time.Millisecond,
	})}

	ctx := retrybudget.WithAction(context.Background(),
		retrybudget.Action{Tenant: "acme", Operation: "charge", Key: "order-1042"})
	req, _ := http.NewRequestWithContext(ctx, "POST", "https://api.example.com/v1/charges", strings.NewReader(`{"amount":1999}`))
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer resp.Body.Close()
	out, _ := retrybudget.OutcomeOf(resp)
	fmt.Println("status:", resp.StatusCode)
	fmt.Println("attempts:", out.Attempts)
	fmt.Println("same key on every attempt:", provider.keys[0] == provider.keys[2] && provider.keys[0] == out.Key)
	// Output:
	// status: 201
	// attempts: 3
	// same key on every attempt: true
}

func ExampleAction_IdempotencyKey() {
	a := retrybudget.Action{Tenant: "acme", Operation: "charge", Key: "order-1042"}
	b := retrybudget.Action{Tenant: "globex", Operation: "charge", Key: "order-1042"}
	// The same action gives the same key in every process, forever.
	fmt.Println(a.IdempotencyKey())
	fmt.Println(a.IdempotencyKey() == b.IdempotencyKey())
	// Output:
	// f10a51b8-983a-56eb-8432-2d524e49b4f3
	// false
}

func ExampleOutcomeOf() {
	// The provider is overloaded and asks for an hour: the Transport does
	// not sleep that long; it returns at once and says when to come back.
	provider := &flaky{statuses: []int{429}, header: http.Header{"Retry-After": {"3600"}}}
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{Base: provider, MaxWait: time.Minute})}
	resp, err := client.Get("https://api.example.com/v1/balance")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer resp.Body.Close()
	out, _ := retrybudget.OutcomeOf(resp)
	fmt.Println("status:", resp.StatusCode)
	fmt.Println("gave up:", errors.Is(out.Err(), retrybudget.ErrWaitTooLong))
	fmt.Println("come back in about an hour:", time.Until(out.RetryAt) > 59*time.Minute)
	// Output:
	// status: 429
	// gave up: true
	// come back in about an hour: true
}

func ExampleError() {
	// Nothing listens on port 1 of the loopback address: every dial is
	// refused, so the request never left and is retried, then given up.
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{MaxAttempts: 2, BaseDelay: time.Millisecond})}
	_, err := client.Post("http://127.0.0.1:1/v1/charges", "application/json", strings.NewReader("{}"))
	var e *retrybudget.Error
	if errors.As(err, &e) {
		fmt.Println("class:", e.Class)
		fmt.Println("attempts:", e.Attempts)
		fmt.Println("may have been applied:", e.MaybeApplied)
		fmt.Println("exhausted:", errors.Is(err, retrybudget.ErrAttemptsExhausted))
	}
	// Output:
	// class: transport-not-sent
	// attempts: 2
	// may have been applied: false
	// exhausted: true
}

// ReasonCode names why a call gave up, the same in metrics (otelretry),
// the planner and any report of your own.
func ExampleReasonCode() {
	err := error(&retrybudget.Error{Outcome: retrybudget.Outcome{Reason: retrybudget.ErrBudgetExhausted}})
	fmt.Println(retrybudget.ReasonCode(err))
	fmt.Println(retrybudget.ReasonCode(context.DeadlineExceeded))
	fmt.Println(retrybudget.ReasonCode(errors.New("something else")))
	// Output:
	// budget_exhausted
	// deadline_exceeded
	// other
}
