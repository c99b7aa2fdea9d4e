// Command demo sends a few hundred charges to a flaky payment API through a
// retrybudget Transport, and shows that none is applied twice.
//
// The API is a fake served on loopback: it deduplicates charges by
// Idempotency-Key and, at random but nearly reproducibly for a given -seed
// (requests net/http re-sends on its own shift a key's later faults), answers
// 429 with Retry-After in both forms, 503, 429 asking for an hour, 400 for
// invalid amounts, or applies a charge and drops the connection without an
// answer. Every action carries a retrybudget.Action, so each retry sends the
// same key and a lost response is recovered by a replay, not a second charge.
//
// Usage:
//
//	go run ./examples/demo [-n 300] [-workers 16] [-seed 1] [-timeout 10s] [-budget 0.5]
//
// The exit status is 1 when a charge was applied twice or an action ended
// without an outcome.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
)

// options configure one run of the demo.
type options struct {
	n       int           // actions to send
	workers int           // actions in flight at once
	seed    uint64        // seeds the actions and the provider's faults
	timeout time.Duration // deadline of each action, retries included
	budget  float64       // share of first attempts that may be retried
	// progress receives the live counters; nil prints none.
	progress io.Writer
	// live redraws the counters on one line, for a terminal.
	live bool
}

func main() {
	opts := options{progress: os.Stderr, live: isTerminal(os.Stderr)}
	flag.IntVar(&opts.n, "n", 300, "number of charges to send")
	flag.IntVar(&opts.workers, "workers", 16, "charges in flight at once")
	flag.Uint64Var(&opts.seed, "seed", 1, "seed of the charges and of the provider's faults")
	flag.DurationVar(&opts.timeout, "timeout", 10*time.Second, "deadline of each charge, retries included")
	flag.Float64Var(&opts.budget, "budget", 0.5, "retries allowed per first attempt (the SDK's default is 0.1)")
	flag.Parse()
	if opts.n < 1 || opts.workers < 1 || opts.timeout <= 0 {
		fmt.Fprintln(os.Stderr, "demo: -n, -workers and -timeout must be positive")
		os.Exit(2)
	}

	s, err := run(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	if err := s.write(os.Stdout, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	if !s.ok() {
		fmt.Fprintln(os.Stderr, "demo: FAILED: duplicate effects or unaccounted actions")
		os.Exit(1)
	}
}

// run starts the provider, sends opts.n charges through a retrybudget
// Transport and returns what both sides saw. It stops everything it
// started before returning.
func run(ctx context.Context, opts options) (*summary, error) {
	p, err := startProvider(opts.seed)
	if err != nil {
		return nil, err
	}
	defer p.close()

	var t tally
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = opts.workers
	rt := retrybudget.New(retrybudget.Config{
		Base:           base,
		BaseDelay:      50 * time.Millisecond,
		MaxDelay:       time.Second,
		MaxWait:        5 * time.Second, // obey "1" and a date two seconds ahead; not "3600"
		AttemptTimeout: 2 * time.Second,
		// The provider fails about 30% of requests on purpose; the default
		// budget (10% of first attempts) would refuse many of the retries
		// this demo is about. Try -budget 0.1 to watch it protect the
		// provider instead.
		Budget:   budget.NewLocal(budget.Config{Percent: opts.budget}),
		Observer: t.observer(),
	})
	// No Client.Timeout: it would hide the Outcome; the context deadline of
	// each action bounds it instead, and the Transport plans around it.
	client := &http.Client{Transport: rt}
	defer client.CloseIdleConnections()

	charges := newActions(opts.n, opts.seed)
	prog := startProgress(opts.progress, opts.live, &t, opts.n)
	start := time.Now()
	results := sendAll(ctx, client, p.url, charges, opts.workers, opts.timeout, &t)
	elapsed := time.Since(start)
	prog.finish()
	return newSummary(results, &t, p, elapsed), nil
}
