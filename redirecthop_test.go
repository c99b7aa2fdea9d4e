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
