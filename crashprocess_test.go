package retrybudget

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
)

// Child processes of these tests are this test binary, re-executed with
// RETRYBUDGET_CHILD naming the role; they read the provider URL, Redis
// address and key prefix from the environment and print one result line.
const childEnv = "RETRYBUDGET_CHILD"

func childStore(t *testing.T) ledger.Store {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("RB_REDIS")})
	t.Cleanup(func() { rdb.Close() })
	return redistest.Must(ledger.NewRedis(rdb, ledger.RedisConfig{Prefix: os.Getenv("RB_PREFIX")}))(t)
}

// TestLedgerChild is the child side; it does nothing in a normal run.
func TestLedgerChild(t *testing.T) {
	role := os.Getenv(childEnv)
	if role == "" {
		t.Skip("child role of the multi-process ledger tests")
	}
	url := os.Getenv("RB_URL")
	switch role {
	case "submit": // 25 goroutines submit the same action at once
		tr := New(Config{Ledger: LedgerConfig{Store: childStore(t)}})
		var mu sync.Mutex
		counts := map[string]int{}
		var wg sync.WaitGroup
		for range 25 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := chargeTo(t, tr, url, order, `{"amount":100}`)
				res := "error"
				switch {
				case errors.Is(err, ErrPending):
					res = "pending"
				case err == nil:
					if _, o := readAll(t, resp); o.Replayed {
						res = "replayed"
					} else {
						res = "sent"
					}
				}
				mu.Lock()
				counts[res]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		fmt.Printf("RESULT sent=%d pending=%d replayed=%d error=%d\n", counts["sent"], counts["pending"], counts["replayed"], counts["error"])
	case "charge": // one charge; the parent kills this process mid-call
		tr := New(Config{Ledger: LedgerConfig{Store: childStore(t), Lease: time.Second}})
		resp, err := chargeTo(t, tr, url, order, `{"amount":100}`)
		if err == nil {
			readAll(t, resp)
		}
		fmt.Println("RESULT finished")
	}
}

// startChild starts this test binary in role and returns it with a reader
// of its stdout.
func startChild(t *testing.T, role, url, addr, prefix string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLedgerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+role, "RB_URL="+url, "RB_REDIS="+addr, "RB_PREFIX="+prefix)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(out)
}

func TestLedgerTwoProcessesFiftySubmissionsOneEffect(t *testing.T) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix(t)
	p := newPayments(t, false)
	var mu sync.Mutex // guards counts
	var counts [4]int
	var wg sync.WaitGroup
	for range 2 {
		cmd, out := startChild(t, "submit", p.URL, srv.Addr, prefix)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for out.Scan() {
				var c [4]int
				if _, err := fmt.Sscanf(out.Text(), "RESULT sent=%d pending=%d replayed=%d error=%d", &c[0], &c[1], &c[2], &c[3]); err == nil {
					mu.Lock()
					for i := range c {
						counts[i] += c[i]
					}
					mu.Unlock()
				}
			}
			cmd.Wait()
		}()
	}
	wg.Wait()
	effects, calls := p.total()
	t.Logf("2 processes x 25 goroutines: sent %d, pending %d, replayed %d, errors %d; provider effects %d", counts[0], counts[1], counts[2], counts[3], effects)
	if effects != 1 || calls != 1 || counts[0] != 1 || counts[0]+counts[1]+counts[2] != 50 {
		t.Fatalf("effects %d calls %d results %v; want one send, 49 pending or replayed", effects, calls, counts)
	}
}

func TestLedgerWorkerSIGKILLedAfterTheEffect(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  func(p *payments) Config
	}{
		{"re-send under the same key", func(p *payments) Config { return Config{KeysHonoured: true} }},
		{"reconciler", func(p *payments) Config { return Config{Ledger: LedgerConfig{Reconciler: byKey(p)}} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			prefix := redistest.Prefix(t)
			p := newPayments(t, true)
			applied, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			p.mu.Lock()
			p.hold = func() {
				once.Do(func() { close(applied); <-release })
			}
			p.mu.Unlock()
			cmd, _ := startChild(t, "charge", p.URL, srv.Addr, prefix)
			<-applied // the provider applied the charge; the ledger is not completed
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			close(release)

			rdb := srv.Client(t)
			store := redistest.Must(ledger.NewRedis(rdb, ledger.RedisConfig{Prefix: prefix}))(t)
			if r, err := store.Get(context.Background(), order); err != nil || r.State != ledger.StateInProgress {
				t.Fatalf("after the kill: %v %v; want the action in progress", r.State, err)
			}
			cfg := tt.cfg(p)
			cfg.Ledger.Store = store
			tr := New(cfg)
			// The restarted worker is told "pending" until the dead
			// worker's 1 s lease ends, as a job queue would be.
			deadline := time.Now().Add(10 * time.Second)
			for {
				resp, err := chargeTo(t, tr, p.URL, order, `{"amount":100}`)
				if errors.Is(err, ErrPending) && time.Now().Before(deadline) {
					var e *Error
					errors.As(err, &e)
					time.Sleep(time.Until(e.RetryAt))
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				body, _ := readAll(t, resp)
				if !strings.Contains(body, order.IdempotencyKey()) {
					t.Fatalf("body %q; want the charge's receipt", body)
				}
				break
			}
			r, err := store.Get(context.Background(), order)
			effects, _ := p.total()
			if err != nil || r.State != ledger.StateCompleted || effects != 1 {
				t.Fatalf("state %v (%v), effects %d; want completed with 1 effect", r.State, err, effects)
			}
		})
	}
}
