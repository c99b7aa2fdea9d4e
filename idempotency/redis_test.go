package idempotency_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
)

// guardTimeout bounds how long a concurrency test waits for an event that
// should come at once; it only turns a deadlock into a failure.
const guardTimeout = 10 * time.Second

// instance is one server of a fleet: its own middleware and store value
// over a shared ledger.
type instance struct {
	srv *httptest.Server
}

// startInstance serves the blocking handler h on POST /things behind a
// middleware over store.
func startInstance(t *testing.T, store ledger.Store, h http.Handler) *instance {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("POST /things", idempotency.New(idempotency.Config{Store: store})(h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &instance{srv: srv}
}

// answer is one client's view of a response.
type answer struct {
	status     int
	body       string
	replayed   string
	retryAfter string
	err        error
}

// post sends POST /things with key and body to base.
func post(base, key, body string) answer {
	req, _ := http.NewRequest(http.MethodPost, base+"/things", strings.NewReader(body))
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: string(b), replayed: resp.Header.Get(idempotency.HeaderReplayed),
		retryAfter: resp.Header.Get("Retry-After"), err: err}
}

// TestTwoInstancesOneRedis sends concurrent identical requests to two
// servers sharing one Redis ledger, each with its own client and store
// value: the handler runs once, every other request is told it is pending,
// and every later request gets the replay.
func TestTwoInstancesOneRedis(t *testing.T) {
	c1 := redistest.Client(t)
	o := c1.Options()
	c2 := redis.NewClient(&redis.Options{Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig})
	t.Cleanup(func() { _ = c2.Close() })
	prefix := redistest.Prefix(t)

	var runs atomic.Int32
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		<-release
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"activation":%d}`, n)
	})
	servers := []*instance{
		startInstance(t, redistest.Must(ledger.NewRedis(c1, ledger.RedisConfig{Prefix: prefix}))(t), h),
		startInstance(t, redistest.Must(ledger.NewRedis(c2, ledger.RedisConfig{Prefix: prefix}))(t), h),
	}

	const clients = 24
	answers := make(chan answer, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { answers <- post(servers[i%2].srv.URL, "k-fleet", `{"n":1}`) })
	}
	// All but the one running request answer at once; only then may the
	// handler finish.
	var got []answer
	for len(got) < clients-1 {
		select {
		case a := <-answers:
			got = append(got, a)
		case <-time.After(guardTimeout):
			close(release)
			t.Fatalf("only %d of %d requests answered while the handler ran (%d runs)", len(got), clients-1, runs.Load())
		}
	}
	close(release)
	wg.Wait()
	close(answers)
	for a := range answers {
		got = append(got, a)
	}

	var created, pending int
	for _, a := range got {
		switch {
		case a.err != nil:
			t.Fatal(a.err)
		case a.status == http.StatusCreated && a.body == `{"activation":1}` && a.replayed == "":
			created++
		case a.status == http.StatusConflict && strings.Contains(a.body, idempotency.TypePending) && a.retryAfter != "":
			pending++
		default:
			t.Errorf("unexpected answer %+v", a)
		}
	}
	if created != 1 || pending != clients-1 {
		t.Errorf("created %d, pending %d; want 1 and %d", created, pending, clients-1)
	}

	// Every retry, on either server, is the replay.
	for i := range 4 {
		a := post(servers[i%2].srv.URL, "k-fleet", `{"n":1}`)
		if a.status != http.StatusCreated || a.body != `{"activation":1}` || a.replayed != "true" {
			t.Errorf("retry %d on server %d: %+v, want the replay", i, i%2, a)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("handler ran %d times across the fleet, want 1", n)
	}
}

// TestRedisDownFailsClosed kills the Redis server under a running service:
// guarded requests are answered 503 with TypeLedgerUnavailable and the
// handler does not run.
func TestRedisDownFailsClosed(t *testing.T) {
	rs := redistest.Start(t)
	c := rs.Client(t)
	var runs atomic.Int32
	inst := startInstance(t, redistest.Must(ledger.NewRedis(c, ledger.RedisConfig{Prefix: redistest.Prefix(t)}))(t),
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { runs.Add(1) }))

	if a := post(inst.srv.URL, "k-up", "{}"); a.status != http.StatusOK {
		t.Fatalf("with Redis up: %+v", a)
	}
	rs.Kill()
	a := post(inst.srv.URL, "k-down", "{}")
	if a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, idempotency.TypeLedgerUnavailable) || a.retryAfter != "1" {
		t.Errorf("with Redis down: %+v, want 503 %s with Retry-After 1", a, idempotency.TypeLedgerUnavailable)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1 (only while Redis was up)", n)
	}
}
