package peers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/retrybudget/retrybudget"
)

// TestScenarios runs the failure scenarios against every contender and
// logs one markdown table per scenario (run with -v to see them). It fails
// only when a scenario cannot run; the numbers are findings, not
// assertions, except for properties the SDK documents.
func TestScenarios(t *testing.T) {
	t.Run("success path", testSuccessPath)
	t.Run("outage", testOutage)
	t.Run("retry-after beyond the deadline", testRetryAfter)
	t.Run("lost response to a POST", testLostResponse)
	t.Run("slow tail", testSlowTail)
	t.Run("slow outage", testSlowOutage)
}

// counting is a loopback server that counts requests and new connections.
type counting struct {
	*httptest.Server
	reqs  atomic.Int64
	conns atomic.Int64
}

func newCounting(t *testing.T, h http.HandlerFunc) *counting {
	s := &counting{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.reqs.Add(1)
		h(w, r)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// result is what the caller of one logical request got.
type result struct {
	status  int
	summary string
	elapsed time.Duration
}

// run sends n logical requests through rt, conc at a time, and returns
// what each caller got. ctxWait, when set, is each request's deadline.
func run(c contender, rt http.RoundTripper, url, method string, n, conc int, ctxWait time.Duration) []result {
	results := make([]result, n)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range jobs {
				results[i] = one(c, rt, url, method, i, ctxWait)
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return results
}

func one(c contender, rt http.RoundTripper, url, method string, i int, ctxWait time.Duration) result {
	ctx := context.Background()
	if ctxWait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ctxWait)
		defer cancel()
	}
	if c.ctx != nil {
		ctx = c.ctx(ctx, i)
	}
	var body io.Reader
	if method == "POST" {
		body = strings.NewReader(fmt.Sprintf(`{"amount":1999,"currency":"eur","order":%q}`, orderID(i)))
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, body)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.header != nil {
		c.header(req.Header, i)
	}
	start := time.Now()
	resp, err := rt.RoundTrip(req)
	r := result{elapsed: time.Since(start), summary: summarize(resp, err, url)}
	if resp != nil {
		r.status = resp.StatusCode
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return r
}

func orderID(n int) string { return fmt.Sprintf("order-%04d", n) }

// summarize describes what the caller got in a few words, for the tables.
func summarize(resp *http.Response, err error, url string) string {
	if err != nil {
		var rb *retrybudget.Error
		var ex retrypolicy.ExceededError
		switch {
		case errors.As(err, &rb):
			return "error " + strings.TrimPrefix(rb.Reason.Error(), "retrybudget: ")
		case errors.As(err, &ex):
			if r, ok := ex.LastResult.(*http.Response); ok && r != nil {
				r.Body.Close()
				return fmt.Sprintf("error retrypolicy.ExceededError (last %d)", r.StatusCode)
			}
			return "error retrypolicy.ExceededError"
		}
		s := strings.ReplaceAll(err.Error(), url, "URL")
		if len(s) > 60 {
			s = s[:60] + "…"
		}
		return "error " + s
	}
	s := fmt.Sprint(resp.StatusCode)
	if o, ok := retrybudget.OutcomeOf(resp); ok && o.Reason != nil {
		s += " + " + strings.TrimPrefix(o.Reason.Error(), "retrybudget: ")
	}
	return s
}

// tally joins the distinct summaries with their counts, most common first.
func tally(rs []result) string {
	n := map[string]int{}
	for _, r := range rs {
		n[r.summary]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(n[b]-n[a], strings.Compare(a, b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d× %s", n[k], k)
	}
	return strings.Join(parts, "; ")
}

func median(rs []result) time.Duration {
	d := make([]time.Duration, len(rs))
	for i, r := range rs {
		d[i] = r.elapsed
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// testOutage: the provider answers 503 to everything. 200 logical GETs,
// 20 at a time; how many attempts reach the provider per logical request?
func testOutage(t *testing.T) {
	const n, conc = 200, 20
	var b strings.Builder
	b.WriteString("| library | attempts per logical request | connections opened | wall time | caller gets |\n|---|---|---|---|---|\n")
	for _, c := range []contender{rbDefault(), rbUnlimited(), retryable(), failsafe(), failsafeBudget()} {
		srv := newCounting(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "unavailable")
		})
		base := newBase()
		start := time.Now()
		rs := run(c, c.rt(base), srv.URL, "GET", n, conc, 0)
		wall := time.Since(start)
		base.CloseIdleConnections()
		per := float64(srv.reqs.Load()) / n
		fmt.Fprintf(&b, "| %s | %.2f | %d | %v | %s |\n", c.name, per, srv.conns.Load(), wall.Round(time.Millisecond), tally(rs))
		if per < 1 || per > maxAttempts {
			t.Errorf("%s: %.2f attempts per request; want within [1, %d]", c.name, per, maxAttempts)
		}
	}
	t.Logf("total outage: 503 to every request, %d logical GETs, %d at a time\n\n%s", n, conc, b.String())
}

// testRetryAfter: the provider answers 429 with Retry-After: 60 and the
// caller's deadline is 2s. How long until the caller hears back?
func testRetryAfter(t *testing.T) {
	const n, deadline = 5, 2 * time.Second
	contenders := []contender{rbDefault(), retryable(), failsafe()}
	rows := make([]string, len(contenders))
	var wg sync.WaitGroup
	for i, c := range contenders {
		srv := newCounting(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, "slow down")
		})
		// The contenders wait (or not) side by side: the run takes one
		// deadline, not three.
		wg.Go(func() {
			base := newBase()
			defer base.CloseIdleConnections()
			rs := run(c, c.rt(base), srv.URL, "GET", n, n, deadline)
			rows[i] = fmt.Sprintf("| %s | %v | %v | %.0f | %s |", c.name, median(rs).Round(time.Millisecond),
				slices.MaxFunc(rs, func(a, b result) int { return cmp.Compare(a.elapsed, b.elapsed) }).elapsed.Round(time.Millisecond),
				float64(srv.reqs.Load())/n, tally(rs))
		})
	}
	wg.Wait()
	t.Logf("429 with Retry-After: 60, context deadline %v, %d logical GETs\n\n"+
		"| library | time to return (median) | max | attempts per request | caller gets |\n|---|---|---|---|---|\n%s\n",
		deadline, n, strings.Join(rows, "\n"))
}

// lostProvider applies a charge, then, on the first request for an order,
// drops the connection before answering: the response is lost, the effect
// is not. It deduplicates by Idempotency-Key, and only when one is sent.
type lostProvider struct {
	mu       sync.Mutex        // guards the maps
	attempts map[string]int    // requests per order
	effects  map[string]int    // charges applied per order
	byKey    map[string]string // charge id per Idempotency-Key
	keyed    int               // requests that carried an Idempotency-Key
}

func (p *lostProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var charge struct{ Order string }
	if err := json.NewDecoder(r.Body).Decode(&charge); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	p.mu.Lock()
	if key != "" {
		p.keyed++
	}
	p.attempts[charge.Order]++
	first := p.attempts[charge.Order] == 1
	id, replay := p.byKey[key]
	if !replay || key == "" {
		p.effects[charge.Order]++
		id = fmt.Sprintf("ch_%s_%d", charge.Order, p.effects[charge.Order])
		if key != "" {
			p.byKey[key] = id
		}
	}
	p.mu.Unlock()
	if first {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"id":%q}`, id)
}

// testLostResponse: 100 logical POSTs, 10 at a time, each of whose first
// response is lost after the charge was applied. How many charges per
// logical POST?
func testLostResponse(t *testing.T) {
	const n, conc = 100, 10
	var b strings.Builder
	b.WriteString("| library | requests with a key | charges per logical POST | orders charged twice or more | attempts per logical POST | caller gets |\n|---|---|---|---|---|---|\n")
	for _, c := range []contender{rbDefault(), rbAction(), rbActionUnlimited(), retryable(), retryableKeyed(), failsafe()} {
		p := &lostProvider{attempts: map[string]int{}, effects: map[string]int{}, byKey: map[string]string{}}
		srv := newCounting(t, p.ServeHTTP)
		base := newBase()
		rs := run(c, c.rt(base), srv.URL, "POST", n, conc, 5*time.Second)
		base.CloseIdleConnections()
		p.mu.Lock()
		var effects, twice int
		for _, e := range p.effects {
			effects += e
			if e > 1 {
				twice++
			}
		}
		p.mu.Unlock()
		reqs := srv.reqs.Load()
		fmt.Fprintf(&b, "| %s | %d of %d | %.2f | %d | %.2f | %s |\n", c.name, p.keyed, reqs, float64(effects)/n, twice,
			float64(reqs)/n, tally(rs))
		if c.name == "retrybudget + Action" && (effects != n || twice != 0) {
			t.Errorf("%s: %d charges for %d POSTs; want exactly one each", c.name, effects, n)
		}
	}
	t.Logf("lost response: the provider charges, then drops the connection on the first request of each order; "+
		"it deduplicates by Idempotency-Key when one is sent; %d logical POSTs, %d at a time\n\n%s", n, conc, b.String())
}
