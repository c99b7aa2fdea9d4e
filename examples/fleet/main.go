// Command fleet runs the README's fleet quickstart for real: three worker
// processes of two tenants share one payment-provider API key through a
// Redis limiter with the fair queue and a Redis ledger, and the report shows
// that the provider's limit was kept, the small tenant got its share and no
// charge was applied twice.
//
// The provider is a fake served on loopback by this process. It meters its
// one API key at -rate requests per second (a token bucket with a burst of
// 200ms worth, 10 at 50/s, answering 429 with Retry-After beyond it) and, like a provider that
// does not deduplicate, counts every charge it accepts: a second accepted
// charge under one Idempotency-Key is a duplicate effect. No fault is
// injected, so every duplicate effect would be the library's.
//
// The workers are this program started again (os.Executable) with the
// worker's configuration in the environment. Each builds its Transport as
// the quickstart does, with retrybudget.NewFleet and the per-deployment
// secret from RETRYBUDGET_SECRET (generated for the run when unset), and
// reads each call with retrybudget.Next. Every process runs both tenants:
// acme with a large backlog (16 loops per process), zeta with a small one
// (1 loop per process). Every fourth order
// is delivered a second time, to any worker of its tenant, as a job queue
// re-delivers a job; the ledger answers it with the stored response.
//
// Usage:
//
//	go run ./examples/fleet [-redis host:port | redis://...] [-duration 10s] [-rate 50] [-fair=false]
//
// -redis defaults to $REDIS_ADDR; without either, a private redis-server
// (from PATH) is started on a free loopback port and stopped at exit. The
// exit status is 1 when a charge was applied twice, the provider refused
// more than it should, or a worker failed.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// options configure one run of the fleet.
type options struct {
	redis    string        // Redis address or URL; empty starts a private redis-server
	duration time.Duration // how long the workers take new jobs
	rate     int           // the provider's limit on its one key, per second
	// firstCome runs the limiter without its fair queue, to compare.
	firstCome bool
	// exe is the program started for each worker; it must call
	// workerMain when workerEnv is set (main does, and so does the
	// test's TestMain).
	exe string
	// log receives progress lines and the workers' stderr; nil discards
	// them.
	log io.Writer
}

func main() {
	if os.Getenv(workerEnv) != "" {
		os.Exit(workerMain())
	}
	os.Exit(parentMain())
}

// parentMain runs the fleet from the command line and returns the exit
// status.
func parentMain() int {
	opts := options{log: os.Stderr}
	flag.StringVar(&opts.redis, "redis", os.Getenv("REDIS_ADDR"), "Redis shared by the workers: host:port or redis://[user:password@]host:port[/db]; empty starts a private redis-server")
	flag.DurationVar(&opts.duration, "duration", 10*time.Second, "how long the workers take new jobs")
	flag.IntVar(&opts.rate, "rate", 50, "requests per second the provider allows its API key")
	fair := flag.Bool("fair", true, "use the limiter's fair queue; -fair=false shows the same load without it")
	flag.Parse()
	opts.firstCome = !*fair
	if opts.duration <= 0 || opts.rate < 1 {
		fmt.Fprintln(os.Stderr, "fleet: -duration and -rate must be positive")
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		return 1
	}
	opts.exe = exe

	// Interrupted, the run still stops its workers, its provider and its
	// private Redis.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := run(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		return 1
	}
	s.write(os.Stdout)
	if err := s.check(); err != nil {
		fmt.Fprintln(os.Stderr, "fleet: FAILED:", err)
		return 1
	}
	return 0
}
