package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// The worker role is this test binary re-executed with E2E_ROLE=worker.
const (
	envRole     = "E2E_ROLE"
	envURL      = "E2E_URL"
	envRedis    = "E2E_REDIS"
	envPrefix   = "E2E_PREFIX"
	envIndex    = "E2E_INDEX"
	envWorkers  = "E2E_WORKERS"
	envActions  = "E2E_ACTIONS"
	envRate     = "E2E_RATE"
	concurrency = 8
	// attemptTimeout is shorter than the provider's slow answers.
	attemptTimeout = 300 * time.Millisecond
	// actionPatience is how long a worker keeps rescheduling one action
	// before it reports it unfinished.
	actionPatience = 90 * time.Second
)

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

// TestWorker is the worker process; it does nothing in a normal run.
func TestWorker(t *testing.T) {
	if os.Getenv(envRole) != "worker" {
		t.Skip("worker role of the end-to-end suite")
	}
	rdb := redis.NewClient(&redis.Options{
		Addr: os.Getenv(envRedis), ContextTimeoutEnabled: true,
		DialTimeout: 100 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond,
		MaxRetries: -1,
	})
	defer rdb.Close()
	prefix := os.Getenv(envPrefix)
	workers := envInt(envWorkers)
	lim, err := limiter.NewRedis(rdb, limiter.RedisConfig{
		Limits: []limiter.Limit{limiter.PerSecond(envInt(envRate))}, Prefix: prefix + "lim:",
		BoundaryKey:   redistest.BoundaryKey(),
		FallbackShare: 1 / float64(workers),
	})
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.NewRedis(rdb, ledger.RedisConfig{Prefix: prefix + "led:",
		Config: ledger.Config{FingerprintKeys: ledger.FingerprintKeys{[]byte("e2e-ledger-fingerprint-key-0123")}}})
	if err != nil {
		t.Fatal(err)
	}
	base := &http.Transport{MaxIdleConnsPerHost: concurrency}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Base:           base,
		Ledger:         retrybudget.LedgerConfig{Store: led, Lease: 2 * time.Second},
		Limiter:        lim,
		Boundary:       limiter.ByCredential(),
		Budget:         redistest.Must(budget.NewRedis(rdb, budget.RedisConfig{Prefix: prefix + "bud:", DestinationKey: []byte("e2e-budget-destination-key-01")}))(t),
		KeysHonoured:   true,
		AttemptTimeout: attemptTimeout,
		BaseDelay:      20 * time.Millisecond,
		MaxDelay:       time.Second,
		MaxAttempts:    6,
		MaxWait:        3 * time.Second,
	})}
	out := &lines{w: os.Stdout}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				out.println(runAction(client, os.Getenv(envURL), i))
			}
		}()
	}
	idx := envInt(envIndex)
	for i := 0; i < envInt(envActions); i++ {
		if i%workers == idx {
			jobs <- i
		}
	}
	close(jobs)
	wg.Wait()
	out.println("EXIT")
}

// lines writes whole lines from many goroutines.
type lines struct {
	mu sync.Mutex // guards w
	w  io.Writer
}

func (l *lines) println(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, s)
}

// runAction drives action i to an end as a job queue would: it re-runs the
// call at the Outcome's RetryAt while the Transport says "later", and
// reports DONE, or TERMINAL with the class and reason.
func runAction(client *http.Client, url string, i int) string {
	act := retrybudget.Action{Tenant: "tenant-" + strconv.Itoa(i%3), Operation: "charge", Key: fmt.Sprintf("order-%05d", i)}
	id := fmt.Sprintf("a-%05d", i)
	give := time.Now().Add(actionPatience)
	runs := 0
	for {
		runs++
		err := callOnce(client, url, act, id)
		if err == nil {
			return fmt.Sprintf("DONE %s runs=%d", id, runs)
		}
		var e *retrybudget.Error
		if !errors.As(err, &e) {
			return fmt.Sprintf("TERMINAL %s class=unknown reason=%q", id, err.Error())
		}
		if errors.Is(err, retrybudget.ErrRejected) || errors.Is(err, retrybudget.ErrUncertain) ||
			errors.Is(err, retrybudget.ErrConflict) || time.Now().After(give) {
			return fmt.Sprintf("TERMINAL %s class=%s reason=%q key=%s", id, e.Class, strings.TrimPrefix(reasonOf(e), "retrybudget: "), e.Key)
		}
		// Later: come back at RetryAt, as a job queue reschedules.
		wait := time.Until(e.RetryAt)
		time.Sleep(min(max(wait, 10*time.Millisecond), 2*time.Second))
	}
}

func reasonOf(e *retrybudget.Error) string {
	if e.Reason != nil {
		return e.Reason.Error()
	}
	return "none"
}

// callOnce sends the action once through the client and returns nil on
// success, else the *retrybudget.Error saying what happened.
func callOnce(client *http.Client, url string, act retrybudget.Action, id string) error {
	ctx, cancel := context.WithTimeout(retrybudget.WithAction(context.Background(), act), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(fmt.Sprintf(`{"action":%q}`, id)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer cred-1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	out, ok := retrybudget.OutcomeOf(resp)
	if !ok {
		return fmt.Errorf("response without an outcome")
	}
	return out.Err()
}
