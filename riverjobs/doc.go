// Package riverjobs runs provider calls made by River jobs
// (github.com/riverqueue/river) through retrybudget, one Action per job, and
// tells River what to do with the job from the call's Outcome.
//
// A job River runs twice, or again after its worker died, is the same
// Action: its provider calls carry the same idempotency key and the action
// ledger replays a completed call instead of sending it again. How the run
// ended becomes one of River's verbs:
//
//	worker returned nil                          -> completed
//	capacity "not now" with RetryAt ahead        -> river.JobSnooze until RetryAt
//	  (429/503 Retry-After past MaxWait, rate limiter, action held elsewhere,
//	  the retry budget refusing the provider's time); for the rate limiter
//	  and an action held elsewhere also a RetryAt the run outlasted
//	  (snoozed from now)
//	ErrRejected (business error), ErrConflict,
//	ErrInvalidAction (retrybudget.StepStop)      -> river.JobCancel with the reason
//	ErrUncertain (may have been applied)         -> river.JobCancel wrapping ErrHeld
//	anything else                                -> River's retry, no sooner than RetryAt
//	(every RetryAt capped at Config.MaxDelay after the run)
//
// and the Outcome (class, attempts, key, reason, retry-at) goes into the
// job's metadata as a Report, so the queue shows why a job waits.
//
// Wire it up with New, Record and RetryPolicy:
//
//	mw := riverjobs.New(riverjobs.Config{TenantField: "tenant", KeyField: "order_id"})
//	client := &http.Client{Transport: riverjobs.Record(retrybudget.New(retrybudget.Config{
//		Ledger: retrybudget.LedgerConfig{Store: store}, MaxWait: time.Second, Limiter: lim,
//	}))}
//	riverClient, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
//		Middleware:  []rivertype.Middleware{mw},
//		RetryPolicy: mw.RetryPolicy(nil),
//		Workers:     workers, // whose Work calls the provider with client and the job's ctx
//	})
//
//snippet:needs app, river
package riverjobs
