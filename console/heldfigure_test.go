package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/testenv"
	"github.com/retrybudget/retrybudget/ledger"
)

// sweepOnly hides a store's held index, so the console pages by Sweep.
type sweepOnly struct{ ledger.Store }

// TestHeldPageOfTenThousandOnRedis measures the first page of the held
// list over 10,000 held actions on Redis, from the held index and, for
// comparison, by Sweep. It asserts the index's page under a second.
func TestHeldPageOfTenThousandOnRedis(t *testing.T) {
	if !testenv.Figures() {
		t.Skip("a figure: set RETRYBUDGET_FIGURES=1")
	}
	const held = 10_000
	store := redisStore(t)
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	keys := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range keys {
				k := ledger.Key{Tenant: fmt.Sprintf("tenant-%d", i%7), Operation: "sms.send", Key: fmt.Sprintf("k%05d", i)}
				res, err := store.Reserve(context.Background(), ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "w"})
				if err == nil {
					err = store.Fail(context.Background(), k, res.Token, ledger.Failure{EffectPossible: true, Reason: "timeout"})
				}
				if err != nil {
					errMu.Lock()
					first = err
					errMu.Unlock()
				}
			}
		}()
	}
	for i := range held {
		keys <- i
	}
	close(keys)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}

	measure := func(name string, s ledger.Store) time.Duration {
		f := newFixture(t, s, nil, Config{})
		f.do("GET", "/", testToken, nil) // warm: scripts loaded, connections open
		var took []time.Duration
		for range 9 {
			start := time.Now()
			code, page := f.do("GET", "/", testToken, nil)
			took = append(took, time.Since(start))
			if code != http.StatusOK || !strings.Contains(page, `id="actions"`) {
				t.Fatalf("%s: status %d", name, code)
			}
		}
		slices.Sort(took)
		r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
		t.Logf("%s: first page of %d held actions: best %s, median %s, worst %s of 9", name, held, r(took[0]), r(took[4]), r(took[8]))
		return took[4]
	}
	if d := measure("held index", store); d >= time.Second {
		t.Errorf("the first page from the held index took %s (median), want under a second", d)
	}
	measure("sweep (no index)", sweepOnly{store})
}
