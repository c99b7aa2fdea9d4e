package retrybudget_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
)

// chargeFake counts the charges it applies: every POST whose body it read.
// It answers a charge only when answer is set; otherwise it holds the
// request until the client gives up on it (the answer comes after the
// caller's deadline).
type chargeFake struct {
	srv     *httptest.Server
	charges atomic.Int32
	answer  atomic.Bool
}

func newChargeFake(t *testing.T) *chargeFake {
	f := &chargeFake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		f.charges.Add(1)
		if !f.answer.Load() {
			// Applied, but the answer is late: the client's deadline cuts
			// the call after the request was written.
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// followNext runs a job as a worker following Next does: it runs again on
// StepRetry (up to runs times) and stops on any other step, returning the
// last step, Outcome and error.
func followNext(runs int, run func() (*http.Response, error)) (retrybudget.Step, retrybudget.Outcome, error) {
	for i := 1; ; i++ {
		resp, err := run()
		if resp != nil {
			resp.Body.Close()
		}
		step, o := retrybudget.Next(resp, err)
		if step != retrybudget.StepRetry || i == runs {
			return step, o, err
		}
	}
}

// A POST that is not safe to repeat (no ledger, no key the provider
// honours), cut by the caller's deadline after it was written, may have
// been applied: Next holds it. Told to retry, a worker would charge twice.
func TestNextHoldsAnUnrepeatablePOSTCutByTheDeadline(t *testing.T) {
	f := newChargeFake(t)
	tr := retrybudget.New(retrybudget.Config{Base: f.srv.Client().Transport})
	run := func() (*http.Response, error) {
		if f.charges.Load() > 0 {
			f.answer.Store(true) // the provider answers a second charge at once
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", f.srv.URL+"/v1/charges", strings.NewReader("amount=100"))
		return tr.RoundTrip(req)
	}
	step, o, err := followNext(3, run)
	if n := f.charges.Load(); n != 1 {
		t.Errorf("the worker following Next charged %d times; want 1", n)
	}
	if step != retrybudget.StepHold || o.Reason != retrybudget.ErrUncertain || !o.MaybeApplied || !o.RetryAt.IsZero() {
		t.Errorf("Next = %v, reason %v, maybe applied %v, retry at %v; want hold, ErrUncertain, maybe applied, no time",
			step, o.Reason, o.MaybeApplied, o.RetryAt)
	}
	if !errors.Is(err, retrybudget.ErrUncertain) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v; want ErrUncertain with the context's error as its cause", err)
	}
}

// The same POST under a key the provider honours is safe to repeat: the
// context's end stays the reason, and the worker runs it again.
func TestNextRetriesARepeatablePOSTCutByTheDeadline(t *testing.T) {
	f := newChargeFake(t)
	tr := retrybudget.New(retrybudget.Config{Base: f.srv.Client().Transport, KeysHonoured: true})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", f.srv.URL+"/v1/charges", strings.NewReader("amount=100"))
	resp, err := tr.RoundTrip(req)
	step, o := retrybudget.Next(resp, err)
	if step != retrybudget.StepRetry || !errors.Is(o.Reason, context.DeadlineExceeded) || !o.MaybeApplied {
		t.Fatalf("Next = %v, reason %v, maybe applied %v; want retry, the context's error, maybe applied", step, o.Reason, o.MaybeApplied)
	}
}

// An SDK's numbered re-send of a call sent before (by another process, say)
// that ends unsent, here past its deadline, may have been applied by that
// earlier send: Next holds it. Told to retry, the worker's next run is a
// new call, sent again.
func TestNextHoldsANumberedResendEndingUnsent(t *testing.T) {
	f := newChargeFake(t)
	f.answer.Store(true)
	// The SDK's first send went out through another process's Transport,
	// which gave up on it; its answer was lost.
	first, _ := http.NewRequest("POST", f.srv.URL+"/v1/charges", strings.NewReader("amount=100"))
	first.Header.Set("X-Stainless-Retry-Count", "0")
	if resp, err := http.DefaultTransport.RoundTrip(first); err == nil {
		resp.Body.Close()
	}
	tr := retrybudget.New(retrybudget.Config{Base: f.srv.Client().Transport})
	sends := 0
	run := func() (*http.Response, error) {
		sends++
		var ctx context.Context = context.Background()
		count := "0"
		if sends == 1 {
			// The SDK's re-send of that call reaches this process with
			// its deadline already spent.
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, time.Now().Add(-time.Second))
			defer cancel()
			count = "1"
		}
		req, _ := http.NewRequestWithContext(ctx, "POST", f.srv.URL+"/v1/charges", strings.NewReader("amount=100"))
		req.Header.Set("X-Stainless-Retry-Count", count)
		return tr.RoundTrip(req)
	}
	step, o, err := followNext(3, run)
	if n := f.charges.Load(); n != 1 {
		t.Errorf("the worker following Next charged %d times; want 1", n)
	}
	if step != retrybudget.StepHold || o.Reason != retrybudget.ErrUncertain || o.Attempts != 0 || !o.MaybeApplied {
		t.Errorf("Next = %v, reason %v, attempts %d, maybe applied %v; want hold, ErrUncertain, 0 attempts, maybe applied",
			step, o.Reason, o.Attempts, o.MaybeApplied)
	}
	if !errors.Is(err, retrybudget.ErrUncertain) || !errors.Is(err, retrybudget.ErrDeadline) {
		t.Errorf("error %v; want ErrUncertain, still matching the reason it ended for (ErrDeadline)", err)
	}
}
