package idempotency_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/idempotency"
)

// Twenty copies of one action sent at once through the Transport to a
// service behind the middleware, whose handler takes a second: the copies
// that find it running are told to come back about when it ends (not when
// the 30s lease would), the Transport retries them within their deadline,
// and every copy gets the one 201 of the one run.
func TestDuplicatesGetTheAnswerSoonAfterItIsReady(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 1s handler")
	}
	const handlerTime, copies = time.Second, 20
	var runs atomic.Int32
	mw := idempotency.New(idempotency.Config{Tenant: func(*http.Request) string { return "acme" }})
	srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		time.Sleep(handlerTime) // the work of the handler, not synchronisation
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"order":`+string(rune('0'+n))+`}`)
	})))
	defer srv.Close()
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{Base: srv.Client().Transport, KeysHonoured: true})}
	act := retrybudget.Action{Tenant: "acme", Operation: "order", Key: "o-1"}

	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	bodies := map[string]int{}
	for range copies {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(retrybudget.WithAction(context.Background(), act), 20*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/orders", strings.NewReader(`{"sku":"x"}`))
			resp, err := client.Do(req)
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			slowest = max(slowest, took)
			if err != nil {
				bodies["error: "+err.Error()]++
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			o, _ := retrybudget.OutcomeOf(resp)
			bodies[strings.TrimSpace(resp.Status+" "+string(b)+" "+retrybudget.ReasonCode(o.Reason))]++
		})
	}
	wg.Wait()
	if n := runs.Load(); n != 1 {
		t.Fatalf("handler ran %d times; want 1", n)
	}
	if len(bodies) != 1 || bodies[`201 Created {"order":1}`] != copies {
		t.Fatalf("answers %v; want %d x the one 201", bodies, copies)
	}
	// The lease is 30s: a copy that waited it out would take that long.
	if slowest > 10*time.Second {
		t.Fatalf("slowest copy answered after %v; want about the handler's time, far from the 30s lease", slowest)
	}
	t.Logf("%d copies, %v handler: slowest answered after %v", copies, handlerTime, slowest.Round(time.Millisecond))
}
