package retrybudget_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
)

// sdkProvider is a provider with a token endpoint and a charge endpoint;
// it counts the charges that reached it.
type sdkProvider struct {
	srv *httptest.Server
	// token and charge are the statuses of the two endpoints; body is the
	// charge's answer.
	token   int
	charge  atomic.Int32
	body    atomic.Pointer[string]
	charges atomic.Int32
}

func newSDKProvider(t *testing.T, token, charge int, body string) *sdkProvider {
	p := &sdkProvider{token: token}
	p.answer(charge, body)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/oauth/token" {
			w.WriteHeader(p.token)
			io.WriteString(w, `{"access_token":"t"}`)
			return
		}
		p.charges.Add(1)
		w.WriteHeader(int(p.charge.Load()))
		io.WriteString(w, *p.body.Load())
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// answer sets the charge endpoint's status and body.
func (p *sdkProvider) answer(status int, body string) {
	p.charge.Store(int32(status))
	p.body.Store(&body)
}

// sdkError is an SDK's typed error for an answer it read: like stripe-go's
// *stripe.Error, it carries the status and no Outcome.
type sdkError struct{ status int }

func (e *sdkError) Error() string { return fmt.Sprintf("sdk: provider answered %d", e.status) }

// errSDKAmount is the SDK's own refusal of a call, before any request.
var errSDKAmount = errors.New("sdk: amount must be positive")

// fakeSDK is a provider SDK in miniature: it checks its parameters and the
// context itself, fetches a token first when asked (a helper call), and
// returns its own errors, which hide the Transport's.
type fakeSDK struct {
	client *http.Client
	base   string
	token  bool
}

func (s *fakeSDK) charge(ctx context.Context, amount int) (string, error) {
	if amount <= 0 {
		return "", errSDKAmount
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("sdk: %w", err)
	}
	if s.token {
		if _, err := s.post(ctx, "/oauth/token", "grant_type=client_credentials"); err != nil {
			return "", err
		}
	}
	body, err := s.post(ctx, "/v1/charges", fmt.Sprintf("amount=%d", amount))
	if err != nil {
		return "", err
	}
	var ch struct{ ID string }
	if err := json.Unmarshal(body, &ch); err != nil {
		return "", fmt.Errorf("sdk: decoding the charge: %w", err)
	}
	return ch.ID, nil
}

func (s *fakeSDK) post(ctx context.Context, path, form string) ([]byte, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", s.base+path, strings.NewReader(form))
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, errors.New("sdk: request failed") // the Transport's error is lost
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		return nil, &sdkError{status: resp.StatusCode}
	}
	return body, nil
}

// newSDK returns a fakeSDK on a Transport to p.
func newSDK(p *sdkProvider, token bool) *fakeSDK {
	tr := retrybudget.New(retrybudget.Config{Base: p.srv.Client().Transport, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	return &fakeSDK{client: &http.Client{Transport: tr}, base: p.srv.URL, token: token}
}

// A captured SDK call reads into the step a worker takes, from the calls
// the SDK made through the Transport, whatever its error says.
func TestCapturedNext(t *testing.T) {
	tests := []struct {
		name          string
		token, charge int
		body          string
		helper        bool // the SDK fetches a token first
		amount        int
		want          retrybudget.Step
		reason        error // errors.Is of the Outcome's Reason; nil: none
		charges       int32
	}{
		{name: "success", token: 200, charge: 201, body: `{"id":"ch_1"}`, amount: 100,
			want: retrybudget.StepDone, charges: 1},
		{name: "typed SDK error for a 400", token: 200, charge: 400, body: `{"error":{"type":"invalid_request_error"}}`, amount: 100,
			want: retrybudget.StepStop, reason: retrybudget.ErrRejected, charges: 1},
		{name: "token fetch beside the call", token: 200, charge: 201, body: `{"id":"ch_1"}`, helper: true, amount: 100,
			want: retrybudget.StepDone, charges: 1},
		{name: "uncertain call after a token fetch", token: 200, charge: 500, helper: true, amount: 100,
			want: retrybudget.StepHold, reason: retrybudget.ErrUncertain, charges: 1},
		{name: "uncertain token fetch", token: 500, charge: 201, helper: true, amount: 100,
			want: retrybudget.StepHold, reason: retrybudget.ErrUncertain, charges: 0},
		{name: "answer the SDK cannot decode", token: 200, charge: 201, body: `<html>`, amount: 100,
			want: retrybudget.StepStop, charges: 1},
		{name: "the SDK refuses the call itself", token: 200, charge: 201, amount: 0,
			want: retrybudget.StepStop, reason: errSDKAmount, charges: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newSDKProvider(t, tt.token, tt.charge, tt.body)
			sdk := newSDK(p, tt.helper)
			ctx, out := retrybudget.CaptureOutcome(context.Background())
			_, err := sdk.charge(ctx, tt.amount)
			step, o := out.Next(err)
			if step != tt.want {
				t.Errorf("out.Next = %v (reason %v); want %v", step, o.Reason, tt.want)
			}
			switch {
			case tt.reason != nil && !errors.Is(o.Reason, tt.reason):
				t.Errorf("reason %v; want %v", o.Reason, tt.reason)
			case tt.want == retrybudget.StepStop && tt.reason == nil && !errors.Is(o.Reason, err):
				t.Errorf("reason %v; want the SDK's error %v", o.Reason, err)
			case tt.want == retrybudget.StepDone && (o.Reason != nil || err != nil):
				t.Errorf("done with reason %v, SDK error %v; want neither", o.Reason, err)
			}
			if n := p.charges.Load(); n != tt.charges {
				t.Errorf("%d charges reached the provider; want %d", n, tt.charges)
			}
		})
	}
}

// Next reads only the calls that ended since the previous Next: a success
// read before never answers a later SDK call that sent nothing.
func TestCapturedNextReadsOnlyItsOwnCall(t *testing.T) {
	p := newSDKProvider(t, 200, 201, `{"id":"ch_1"}`)
	sdk := newSDK(p, false)
	ctx, out := retrybudget.CaptureOutcome(context.Background())
	_, err := sdk.charge(ctx, 100)
	if step, _ := out.Next(err); step != retrybudget.StepDone {
		t.Fatalf("first call: %v; want done", step)
	}
	_, err = sdk.charge(ctx, 0) // refused by the SDK, nothing sent
	if step, o := out.Next(err); step != retrybudget.StepStop || !errors.Is(o.Reason, errSDKAmount) {
		t.Fatalf("second call: %v, reason %v; want stop with the SDK's error, not the first call's success", step, o.Reason)
	}
	if step, o := out.Next(nil); step != retrybudget.StepStop || !errors.Is(o.Reason, retrybudget.ErrNoCall) {
		t.Fatalf("nothing since: %v, reason %v; want stop, ErrNoCall", step, o.Reason)
	}
}

// When no call reached the Transport, Next is never done and never a blind
// retry: the caller's context that ended first is a retry; no error at all
// is a wiring mistake (a client not built on the Transport).
func TestCapturedNextWithoutACall(t *testing.T) {
	p := newSDKProvider(t, 200, 201, `{"id":"ch_1"}`)
	t.Run("the caller's context ended first", func(t *testing.T) {
		sdk := newSDK(p, false)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ctx, out := retrybudget.CaptureOutcome(ctx)
		_, err := sdk.charge(ctx, 100)
		if step, o := out.Next(err); step != retrybudget.StepRetry || !errors.Is(o.Reason, context.Canceled) || !o.RetryAt.IsZero() {
			t.Fatalf("out.Next = %v, reason %v, retry at %v; want retry, context.Canceled, no time", step, o.Reason, o.RetryAt)
		}
	})
	t.Run("a client not built on the Transport", func(t *testing.T) {
		sdk := &fakeSDK{client: p.srv.Client(), base: p.srv.URL}
		ctx, out := retrybudget.CaptureOutcome(context.Background())
		_, err := sdk.charge(ctx, 100)
		if step, o := out.Next(err); step != retrybudget.StepStop || !errors.Is(o.Reason, retrybudget.ErrNoCall) || err != nil {
			t.Fatalf("out.Next = %v, reason %v (SDK error %v); want stop, ErrNoCall", step, o.Reason, err)
		}
	})
}

// A hold is never lost among many calls, beyond those Captured keeps.
func TestCapturedNextKeepsAHoldAmongManyCalls(t *testing.T) {
	p := newSDKProvider(t, 200, 500, "")
	sdk := newSDK(p, false)
	ctx, out := retrybudget.CaptureOutcome(context.Background())
	sdk.charge(ctx, 100) // uncertain: an unkeyed POST answered 500
	p.answer(201, `{"id":"ch_2"}`)
	var err error
	for range 40 {
		_, err = sdk.charge(ctx, 100)
	}
	if step, o := out.Next(err); step != retrybudget.StepHold || !errors.Is(o.Reason, retrybudget.ErrUncertain) {
		t.Fatalf("out.Next = %v, reason %v; want hold, ErrUncertain", step, o.Reason)
	}
}
