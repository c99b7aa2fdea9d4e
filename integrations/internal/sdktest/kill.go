package sdktest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
)

// ChildTest is the name of the test each module runs WorkerChild in: the
// worker of WorkerKilledAfterTheEffect is the module's test binary,
// re-executed with childEnv set to run only that test; it reads the fake's
// URL, the Redis address and the key prefix from the environment.
const ChildTest = "TestSDKWorkerChild"

// childEnv names the SDK the re-executed worker calls through.
const childEnv = "RETRYBUDGET_SDK_CHILD"

// killAction is the action the killed worker and its successor both run.
var killAction = retrybudget.Action{Tenant: "acme", Operation: "pay", Key: "job-42"}

// WorkerChild is the worker's side of WorkerKilledAfterTheEffect, the body
// of the module's ChildTest; it skips in a normal run.
func WorkerChild(t *testing.T, s SDK) {
	if os.Getenv(childEnv) != s.Name {
		t.Skip("worker role of TestWorkerKilledAfterTheEffect")
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("RB_REDIS")})
	defer rdb.Close()
	store := ledgertest.Redis(t, rdb, os.Getenv("RB_PREFIX"))
	tr := retrybudget.New(retrybudget.Config{
		Ledger: retrybudget.LedgerConfig{Store: store, Lease: time.Second},
		Routes: []retrybudget.Route{s.Preset().At(os.Getenv("RB_URL"))},
	})
	fmt.Println("STARTED")
	err := s.Call(retrybudget.WithAction(context.Background(), killAction), os.Getenv("RB_URL"), tr, true)
	fmt.Println("RESULT", err)
}

// WorkerKilledAfterTheEffect: a worker process calls the provider through
// the SDK at its defaults and is SIGKILLed after the provider applied the
// effect, before the answer reached it. A second worker runs the same job:
// the provider still applies one effect. Where the provider honours keys,
// the job is re-sent under exactly the Action's key (the one the ledger
// record stands for) and the provider replays its answer; elsewhere the
// ledger reports the action uncertain and sends nothing.
func WorkerKilledAfterTheEffect(t *testing.T, s SDK) {
	srv := redistest.Start(t)
	prefix := redistest.Prefix(t)
	p := Start(t, s)
	applied, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	p.OnEffect(func(*http.Request) { once.Do(func() { close(applied); <-release }) })

	cmd := exec.Command(os.Args[0], "-test.run=^"+ChildTest+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+s.Name, "RB_URL="+p.URL(), "RB_REDIS="+srv.Addr, "RB_PREFIX="+prefix)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { // drain the worker's output
		sc := bufio.NewScanner(out)
		for sc.Scan() {
		}
	}()
	select {
	case <-applied:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the worker never reached the provider")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	close(release)

	store := ledgertest.Redis(t, srv.Client(t), prefix)
	tr := retrybudget.New(retrybudget.Config{
		Ledger: retrybudget.LedgerConfig{Store: store},
		Routes: []retrybudget.Route{s.Preset().At(p.URL())},
	})
	// The second worker is told "pending" until the dead worker's 1s
	// lease ends, as a job queue would be.
	deadline := time.Now().Add(15 * time.Second)
	var o retrybudget.Outcome
	for {
		ctx, capt := retrybudget.CaptureOutcome(retrybudget.WithAction(context.Background(), killAction))
		err := s.Call(ctx, p.URL(), tr, true)
		o, _ = capt.Last()
		if errors.Is(o.Reason, retrybudget.ErrPending) && time.Now().Before(deadline) {
			time.Sleep(time.Until(o.RetryAt))
			continue
		}
		if s.Honours && err != nil {
			t.Fatalf("re-run: %v", err)
		}
		break
	}
	if e := p.Effects(); e != 1 {
		t.Fatalf("effects = %d, want 1", e)
	}
	arr := p.Targets()
	if s.Honours {
		if len(arr) != 2 {
			t.Fatalf("%d sends, want the killed one and one re-send", len(arr))
		}
		for _, a := range arr {
			if a.Key != killAction.IdempotencyKey() {
				t.Errorf("send with key %q, want the Action's %q", a.Key, killAction.IdempotencyKey())
			}
		}
		return
	}
	if len(arr) != 1 || !errors.Is(o.Reason, retrybudget.ErrUncertain) {
		t.Fatalf("%d sends, outcome %+v; want 1 send and ErrUncertain", len(arr), o)
	}
}
