package retrybudget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
)

// How Next reads a redirect that reaches the worker: http.Client follows
// every redirect it can, so a 3xx it returns was not followed, and the
// request was not applied where it was sent to, unless the provider
// answered 303 (See Other: applied, RFC 9110 §15.4.4).

func TestRedirectNotFollowedIsNotDone(t *testing.T) {
	for _, tc := range []struct {
		redirect int
		ledgered bool
	}{
		{http.StatusTemporaryRedirect, false},
		{http.StatusPermanentRedirect, false},
		{http.StatusTemporaryRedirect, true},
		{http.StatusPermanentRedirect, true},
	} {
		t.Run(fmt.Sprintf("%d ledger=%v", tc.redirect, tc.ledgered), func(t *testing.T) {
			it := &issueTracker{redirect: tc.redirect}
			p := newProvider(t, it.ServeHTTP)
			cfg := Config{OmitKey: true}
			if tc.ledgered {
				cfg.Ledger.Store = ledger.NewMemory(ledger.MemoryConfig{})
			}
			client := &http.Client{Transport: New(cfg)}
			// A bare body: no GetBody, so http.Client cannot send the
			// POST again to the new location and returns the redirect.
			for run := 1; run <= 2; run++ {
				req, err := http.NewRequestWithContext(WithAction(context.Background(), openIssue), http.MethodPost,
					p.URL+"/repos/old/issues", io.NopCloser(strings.NewReader(`{"title":"disk full"}`)))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				step, o := Next(resp, err)
				if created, _ := it.counts(); created != 0 {
					t.Fatalf("run %d: %d issues created; want none", run, created)
				}
				if step != StepStop || !errors.Is(o.Reason, ErrRedirectNotFollowed) {
					t.Fatalf("run %d: status %d: Next says %v (reason %v) though nothing was created; want stop, ErrRedirectNotFollowed",
						run, resp.StatusCode, step, o.Reason)
				}
				if got := ReasonCode(o.Reason); got != "redirect_not_followed" {
					t.Fatalf("ReasonCode = %q; want redirect_not_followed", got)
				}
			}
		})
	}
}

func TestRedirectStepByStatus(t *testing.T) {
	// Read by its status alone (no Transport): 303 and 304 are answers,
	// every other 3xx a redirect nobody followed.
	for status, want := range map[int]Step{
		http.StatusSeeOther:          StepDone,
		http.StatusNotModified:       StepDone,
		http.StatusMovedPermanently:  StepStop,
		http.StatusFound:             StepStop,
		http.StatusTemporaryRedirect: StepStop,
		http.StatusPermanentRedirect: StepStop,
	} {
		if step, _ := Next(&http.Response{StatusCode: status}, nil); step != want {
			t.Errorf("Next of a bare %d = %v; want %v", status, step, want)
		}
		if step, _ := (Outcome{Class: ClassSuccess, StatusCode: status}).advise(); step != want {
			t.Errorf("the Transport's Outcome of a %d: %v; want %v", status, step, want)
		}
	}
}
