package retrybudget

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/budget"
)

// The real clock and net/http are the point: an attempt cut by its
// AttemptTimeout must be told from an answer by the error net/http
// returns. Once most attempts to the provider ran out of time, a new call
// no more patient than they were is refused before it is sent, and one
// that may wait longer still goes.
func TestOverloadRefusesCallsThatWouldTimeOutBehindTheQueue(t *testing.T) {
	release := make(chan struct{})
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		select { // a queue that answers nobody in time
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	// A minute's window: the test's timing cannot age the timeouts out.
	o := budget.NewOverload(budget.OverloadConfig{Window: time.Minute})
	impatient := New(Config{Base: base, Overload: o, AttemptTimeout: 30 * time.Millisecond, MaxAttempts: 1})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := send(context.Background(), t, impatient, "GET", p.URL, ""); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v; want the attempt's timeout", err)
			}
		})
	}
	wg.Wait()
	refused, sent := 0, 0
	for range 30 {
		_, err := send(context.Background(), t, impatient, "GET", p.URL, "")
		var e *Error
		switch {
		case !errors.As(err, &e):
			t.Fatalf("error %v; want an *Error", err)
		case errors.Is(err, context.DeadlineExceeded) && e.Attempts == 1:
			sent++
		case errors.Is(err, ErrThrottled) && e.Attempts == 0 && e.Class == ClassCapacity:
			refused++
		default:
			t.Fatalf("error %v; want a timeout after one attempt or a capacity *Error with ErrThrottled and none", err)
		}
	}
	// From 8 timeouts of 8 attempts the probability is 5/9 and rises with
	// every call sent: 30 calls all sent would be a one-in-a-billion pick.
	// A refused call never reaches the provider (a sent one may not have
	// either when it timed out).
	if n := len(p.requests()); refused == 0 || n > 8+sent {
		t.Fatalf("%d refused, %d sent, %d arrivals; want some refused and at most %d arrivals", refused, sent, n, 8+sent)
	}
	// A caller with a longer deadline and no AttemptTimeout may wait past
	// what ran out: its attempt is sent.
	patient := New(Config{Base: base, Overload: o, MaxAttempts: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := send(ctx, t, patient, "GET", p.URL, "")
	if e := (*Error)(nil); !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &e) || e.Attempts != 1 {
		t.Fatalf("patient call: error %v; want it sent and timed out", err)
	}
}

// A provider that answers, even with 503 to everything, is never shed by
// the Overload: its answers cost it little, and the retry budget bounds the
// retries.
func TestOverloadLeavesAnsweringProvidersAlone(t *testing.T) {
	p := newProvider(t, status(503))
	tr := New(Config{MaxAttempts: 1, AttemptTimeout: time.Second})
	for range 50 {
		resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
		if err != nil {
			t.Fatalf("call refused: %v", err)
		}
		finalOutcome(t, resp)
	}
	if n := len(p.requests()); n != 50 || !tr.cfg.Overload.Quiet() {
		t.Fatalf("%d of 50 calls sent, Overload quiet %v; want all sent and quiet", n, tr.cfg.Overload.Quiet())
	}
}
