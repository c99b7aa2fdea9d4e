package retrybudget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A redirect hop's failure stands for the request that caused it: a POST
// answered 303 was applied (RFC 9110 §15.4.4), and one answered any other
// 3xx may have been; a GET or a re-sent POST that then fails leaves the
// action maybe applied, never "retry".

func TestRedirectHopFailureAfterAnUnsafeRequestIsUncertain(t *testing.T) {
	for _, redirect := range []int{http.StatusSeeOther, http.StatusFound, http.StatusTemporaryRedirect} {
		t.Run(fmt.Sprint(redirect), func(t *testing.T) {
			var charges atomic.Int32
			p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				switch r.URL.Path {
				case "/charges":
					if redirect != http.StatusTemporaryRedirect {
						// Applied, then redirected to the result (the
						// Post/Redirect/Get pattern, a 302 in older sites).
						charges.Add(1)
					}
					http.Redirect(w, r, "/charges/1", redirect)
				default:
					if r.Method == http.MethodPost {
						charges.Add(1)
					}
					// The answer never comes: the caller's deadline ends
					// the hop.
					<-r.Context().Done()
				}
			})
			ctx, cancel := context.WithTimeout(WithAction(context.Background(), openIssue), 300*time.Millisecond)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/charges", strings.NewReader(`{"amount":100}`))
			if err != nil {
				t.Fatal(err)
			}
			client := &http.Client{Transport: New(Config{OmitKey: true, MaxAttempts: 2, BaseDelay: time.Millisecond})}
			resp, err := client.Do(req)
			if resp != nil {
				resp.Body.Close()
			}
			step, o := Next(resp, err)
			if charges.Load() == 0 {
				t.Fatal("the provider applied nothing; the test is wrong")
			}
			if step != StepHold || !o.MaybeApplied || !errors.Is(o.Reason, ErrUncertain) {
				t.Fatalf("after a %d whose hop failed: Next says %v (reason %v, maybeApplied %v); want hold, ErrUncertain, maybe applied",
					redirect, step, o.Reason, o.MaybeApplied)
			}
		})
	}
}

func TestSDKResendAfterAnUncertainRedirectHopIsNotSent(t *testing.T) {
	// An SDK re-sends its POST, numbered, when the answer it finally got
	// failed: here the 307's hop, applied and answered 500. The re-send
	// is of the first request, to the first URL, which the provider
	// redirected only for a while (a 307 is temporary, RFC 9110 §15.4.8)
	// and applies now: the re-send must get the redirect again and stop
	// at the hop's give-up.
	var arrivals, charges atomic.Int32
	p := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		arrivals.Add(1)
		if r.URL.Path == "/charges" && arrivals.Load() == 1 {
			http.Redirect(w, r, "/v2/charges", http.StatusTemporaryRedirect)
			return
		}
		charges.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	})
	client := &http.Client{Transport: New(Config{OmitKey: true, MaxAttempts: 2, BaseDelay: time.Millisecond})}
	ctx, out := CaptureOutcome(WithAction(context.Background(), openIssue))
	for n := 0; n < 3; n++ { // the SDK's first send and two re-sends
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/charges", strings.NewReader(`{"amount":100}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Stainless-Retry-Count", fmt.Sprint(n))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("send %d: %v", n, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if got := charges.Load(); got != 1 {
		t.Fatalf("the SDK's three sends charged %d times (%d arrivals); want once", got, arrivals.Load())
	}
	if step, o := out.Next(errors.New("sdk: error status 500")); step != StepHold {
		t.Fatalf("out.Next says %v (reason %v); want hold", step, o.Reason)
	}
}
