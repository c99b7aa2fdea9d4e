package ledgertest

import (
	"errors"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/ledger"
)

// PollBound caps every wait of Poll and WaitClock, so a broken expiry fails
// a test instead of hanging it.
const PollBound = 10 * time.Second

// Poll checks cond until it holds, failing t after PollBound. It is for
// waiting on a server's clock, which a test cannot move; the interval is a
// polling period, not synchronisation.
func Poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(PollBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %s", what, PollBound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitClock returns once the clock read by now has moved d past its
// reading at the call: the server's clock, by which stores judge leases.
func WaitClock(t testing.TB, what string, d time.Duration, now func() (time.Time, error)) {
	t.Helper()
	start, err := now()
	if err != nil {
		t.Fatal(err)
	}
	Poll(t, what+" to pass "+d.String(), func() bool {
		n, err := now()
		if err != nil {
			t.Fatal(err)
		}
		return n.Sub(start) >= d
	})
}

// WaitGoneByGet returns a Harness.WaitGone for a store whose Get reports
// an expired record as ErrNotFound by the store's own clock: it polls Get
// until it does.
func WaitGoneByGet(s ledger.Store) func(t *testing.T, k ledger.Key) {
	return func(t *testing.T, k ledger.Key) {
		Poll(t, "record to expire", func() bool {
			_, err := s.Get(t.Context(), k)
			if err != nil && !errors.Is(err, ledger.ErrNotFound) {
				t.Fatal(err)
			}
			return err != nil
		})
	}
}
