package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/retrybudget/retrybudget"
)

// ending is how one action ended, as the client saw it.
type ending int

const (
	unaccounted ending = iota // no Outcome to tell; must never happen
	succeeded                 // the provider answered 2xx
	rejected                  // a business error: retrying would not help
	gaveUp                    // the Transport stopped; Outcome.RetryAt says when to come back
)

// String names the ending in reports.
func (e ending) String() string {
	switch e {
	case succeeded:
		return "succeeded"
	case rejected:
		return "rejected"
	case gaveUp:
		return "gave up"
	}
	return "unaccounted"
}

// result is what the client knows of one action once it is done.
type result struct {
	index    int
	action   retrybudget.Action
	ending   ending
	outcome  retrybudget.Outcome
	replayed bool  // a success answered from the provider's stored response
	err      error // the error that left the action unaccounted, if any
}

// tally holds the live counters fed by the Transport's Observer and by the
// workers; the progress line reads them while the load runs.
type tally struct {
	attempts  atomic.Int64
	retries   atomic.Int64
	byClass   [retrybudget.ClassBusiness + 1]atomic.Int64 // retries by failed class
	done      atomic.Int64
	succeeded atomic.Int64
	rejected  atomic.Int64
	gaveUp    atomic.Int64
}

// observer returns the Observer that feeds t.
func (t *tally) observer() retrybudget.Observer {
	return retrybudget.Observer{
		Attempt: func(retrybudget.AttemptEvent) { t.attempts.Add(1) },
		Retry: func(e retrybudget.RetryEvent) {
			t.retries.Add(1)
			if e.Class >= 0 && int(e.Class) < len(t.byClass) {
				t.byClass[e.Class].Add(1)
			}
		},
	}
}

// count records the ending of one action.
func (t *tally) count(e ending) {
	switch e {
	case succeeded:
		t.succeeded.Add(1)
	case rejected:
		t.rejected.Add(1)
	case gaveUp:
		t.gaveUp.Add(1)
	}
	t.done.Add(1)
}

// newActions returns n charges drawn from seed, about 3% of them with an
// invalid amount the provider rejects.
func newActions(n int, seed uint64) []charge {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	tenants := [...]string{"acme", "globex", "initech"}
	cs := make([]charge, n)
	for i := range cs {
		cs[i] = charge{
			Tenant: tenants[r.IntN(len(tenants))],
			Order:  fmt.Sprintf("order-%d", i+1),
			Amount: 100 + r.IntN(50_000),
		}
		if r.IntN(100) < 3 {
			cs[i].Amount = -cs[i].Amount
		}
	}
	return cs
}

// sendAll sends every charge to url through client with the given number of
// workers, each action under its own deadline, and returns the results in
// the order of charges.
func sendAll(ctx context.Context, client *http.Client, url string, charges []charge, workers int, timeout time.Duration, t *tally) []result {
	results := make([]result, len(charges))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				results[i] = send(ctx, client, url, i, charges[i], timeout)
				t.count(results[i].ending)
			}
		})
	}
	for i := range charges {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// send makes one charge as one business action, and sorts out how it ended
// from the Transport's Outcome: on the response when the provider answered,
// on the *retrybudget.Error otherwise.
func send(ctx context.Context, client *http.Client, url string, i int, c charge, timeout time.Duration) result {
	res := result{index: i, action: retrybudget.Action{Tenant: c.Tenant, Operation: "charge", Key: c.Order}}
	ctx, cancel := context.WithTimeout(retrybudget.WithAction(ctx, res.action), timeout)
	defer cancel()
	body, _ := json.Marshal(c)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/charges", bytes.NewReader(body))
	if err != nil {
		res.err = err
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if resp != nil {
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
	}
	var rbErr *retrybudget.Error
	if _, ok := retrybudget.OutcomeOf(resp); !ok && !errors.As(err, &rbErr) {
		res.err = err
		if err == nil {
			res.err = fmt.Errorf("status %d without an Outcome", resp.StatusCode)
		}
		return res
	}
	// Every worker reads the outcome with retrybudget.Next.
	step, out := retrybudget.Next(resp, err)
	res.outcome = out
	switch step {
	case retrybudget.StepDone:
		res.ending = succeeded
		res.replayed = resp != nil && resp.Header.Get("Idempotent-Replayed") == "true"
	case retrybudget.StepStop:
		res.ending = rejected
	default: // retry at Outcome.RetryAt, or hold an uncertain action
		res.ending = gaveUp
	}
	return res
}
