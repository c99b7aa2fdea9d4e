package retrybudget

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
	"github.com/retrybudget/retrybudget/limiter"
)

// Settling an action, and sending it, under the ledger: each test is named
// after the rule it pins, and opens with the failure that rule prevents.

func TestSettleHonoursTheDeadlineWhenRedisFreezes(t *testing.T) {
	// Settling ends at the call's deadline. Failure pinned: Complete and
	// Fail ran under context.WithoutCancel with no timeout, so with Redis
	// frozen after Reserve a call with a 300 ms deadline came back after
	// 5.33 s, though the provider had answered.
	// The slack covers a stalled, loaded machine and stays below
	// go-redis's own 3 s ReadTimeout, which would otherwise end the wait.
	const deadline = time.Second
	const slack = time.Second
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { client.Close() })
	store := ledgertest.Redis(t, client, redistest.Prefix(t))
	for _, tc := range []struct {
		name string
		cfg  Config
		ctx  bool // the deadline is the context's, else Config.Deadline
	}{
		{"context deadline", Config{Ledger: LedgerConfig{Store: store}}, true},
		{"Config.Deadline", Config{Ledger: LedgerConfig{Store: store}, Deadline: deadline}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var effects atomic.Int32
			thaws := make(chan func(), 1)
			provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				effects.Add(1)
				thaws <- srv.Freeze(t) // the fault: Redis hangs once the action is reserved
				w.WriteHeader(http.StatusCreated)
			}))
			t.Cleanup(provider.Close)
			ctx := WithAction(context.Background(), Action{Tenant: "acme", Operation: "charge", Key: tc.name})
			if tc.ctx {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, deadline)
				defer cancel()
			}
			start := time.Now()
			resp, err := send(ctx, t, New(tc.cfg), "POST", provider.URL, "x")
			elapsed := time.Since(start)
			select {
			case thaw := <-thaws:
				thaw()
			default:
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated || effects.Load() != 1 {
				t.Fatalf("status %d, effects %d; want the provider's 201, one effect", resp.StatusCode, effects.Load())
			}
			if elapsed > deadline+slack {
				t.Fatalf("RoundTrip took %v with a %v deadline; settling must not hold it past the deadline", elapsed, deadline)
			}
		})
	}
}

// hangingStore is a Store whose writes after Reserve wait on their
// context, as a store blocked on a hung connection does.
type hangingStore struct{ ledger.Store }

func (hangingStore) AddAttempt(ctx context.Context, _ ledger.Key, _ int64, _ string) (ledger.Attempt, error) {
	<-ctx.Done()
	return ledger.Attempt{}, ctx.Err()
}

func (hangingStore) Complete(ctx context.Context, _ ledger.Key, _ int64, _ ledger.Outcome) error {
	<-ctx.Done()
	return ctx.Err()
}

func (hangingStore) Fail(ctx context.Context, _ ledger.Key, _ int64, _ ledger.Failure) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestSettleHonoursTheDeadlineWithAStoreThatWaitsOnItsContext(t *testing.T) {
	// Settling runs under a context that ends. Failure pinned: settling ran
	// under a context that never ends, so a store waiting on it never let RoundTrip return.
	const deadline, slack = time.Second, time.Second
	p := newPayments(t, true)
	store := hangingStore{ledger.NewMemory(ledger.MemoryConfig{})}
	tr := New(Config{Ledger: LedgerConfig{Store: store}, Deadline: deadline})
	start := time.Now()
	resp, err := chargeTo(t, tr, p.URL, order, "x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if elapsed := time.Since(start); elapsed > deadline+slack {
		t.Fatalf("RoundTrip took %v with a %v deadline", elapsed, deadline)
	}
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d; want the provider's 201", resp.StatusCode)
	}
}

// redisStore returns a Redis ledger over a client of srv with opts, each
// test under its own prefix.
func redisStore(t *testing.T, srv *redistest.Server, opts redis.Options) (*ledger.Redis, *redis.Client) {
	t.Helper()
	opts.Addr = srv.Addr
	client := redis.NewClient(&opts)
	t.Cleanup(func() { client.Close() })
	return ledgertest.Redis(t, client, redistest.Prefix(t)), client
}

// lostReplyStore loses the reply to its first Reserve after the store
// wrote it, as a Redis client timing out on a slow script does.
type lostReplyStore struct {
	ledger.Store
	lost atomic.Bool
}

func (s *lostReplyStore) Reserve(ctx context.Context, r ledger.ReserveRequest) (ledger.Reservation, error) {
	res, err := s.Store.Reserve(ctx, r)
	if err == nil && s.lost.CompareAndSwap(false, true) {
		return ledger.Reservation{}, errors.New("i/o timeout")
	}
	return res, err
}

func TestReserveWithALostReplyIsNotRefusedByItsOwnGrant(t *testing.T) {
	// A Reserve whose reply was lost is the caller's own grant. Failure
	// pinned: a Reserve whose reply was lost after
	// the store wrote the grant ended the call with ErrLedger, 0 provider
	// calls, or was refused by its own reservation (ErrPending); after the
	// lease the never-sent action came back as uncertain.
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) ledger.Store
		fault func(t *testing.T)
	}{
		{"reply lost", func(t *testing.T) ledger.Store {
			return &lostReplyStore{Store: ledger.NewMemory(ledger.MemoryConfig{})}
		}, func(*testing.T) {}},
		{"Redis frozen 250ms, ReadTimeout 100ms", func(t *testing.T) ledger.Store {
			s, client := redisStore(t, srv, redis.Options{ReadTimeout: 100 * time.Millisecond})
			if err := client.Ping(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			return s
		}, func(t *testing.T) {
			thaw := srv.Freeze(t)
			time.AfterFunc(250*time.Millisecond, thaw) // the fault: Redis hangs this long
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPayments(t, false)
			store := tc.store(t)
			tr := New(Config{Ledger: LedgerConfig{Store: store}})
			tc.fault(t)
			resp, err := chargeTo(t, tr, p.URL, order, "x")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if effects, calls := p.total(); resp.StatusCode != 201 || effects != 1 || calls != 1 {
				t.Fatalf("status %d, effects %d, calls %d; want 201 sent once", resp.StatusCode, effects, calls)
			}
			if r := stateOf(t, store, order); r.State != ledger.StateCompleted || !r.Sending {
				t.Fatalf("record %v, sending %v; want completed, marked as sending", r.State, r.Sending)
			}
		})
	}
}

// unmarkableStore cannot write the sending mark, as a store that went
// down right after Reserve.
type unmarkableStore struct{ ledger.Store }

func (unmarkableStore) MarkSending(context.Context, ledger.Key, int64) error {
	return errors.New("connection refused")
}

func TestNothingIsSentWithoutTheSendingMark(t *testing.T) {
	// The Transport marks the action sending before it sends. Failure
	// pinned: the Transport sent without marking
	// the action, so a lease that ran out could not tell a never-sent
	// action from one that may have been applied.
	p := newPayments(t, false)
	store := unmarkableStore{ledger.NewMemory(ledger.MemoryConfig{})}
	tr := New(Config{Ledger: LedgerConfig{Store: store}})
	_, err := chargeTo(t, tr, p.URL, order, "x")
	e, ok := errors.AsType[*Error](err)
	if !ok || !errors.Is(err, ErrLedger) || e.Attempts != 0 || e.MaybeApplied || e.Class != ClassNotSent {
		t.Fatalf("error %v; want ErrLedger, nothing sent", err)
	}
	if _, calls := p.total(); calls != 0 {
		t.Fatalf("calls %d; want none", calls)
	}
	if r := stateOf(t, store, order); r.State != ledger.StateFailed {
		t.Fatalf("record %v; want failed with no effect possible, so the next call sends it", r.State)
	}
}

// unrenewedStore accepts every renewal without extending the lease, as a
// store whose renewals are lost does.
type unrenewedStore struct{ ledger.Store }

func (unrenewedStore) Renew(context.Context, ledger.Key, int64, time.Duration) error { return nil }

func TestSlowReconcilerNeverLetsTwoWorkersSend(t *testing.T) {
	// A reconciling worker renews its lease and sends only while it owns
	// the action. Failure pinned: the reconcile grant ran the Reconciler
	// with nothing renewing the lease, then sent without checking that it
	// still owned the action. Dead owner, workers A and B, lease 300 ms,
	// reconciler 400 ms: both got 201, 2 effects, history
	// [dead:created A:reconcile B:reconcile B:success].
	const lease, slow = 300 * time.Millisecond, 400 * time.Millisecond
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name  string
		wrap  func(ledger.Store) ledger.Store
		wantB error // B's reason; nil: B sends
	}{
		{"lease renewed while reconciling", func(s ledger.Store) ledger.Store { return s }, ErrPending},
		{"ownership checked before the first send", func(s ledger.Store) ledger.Store { return unrenewedStore{s} }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPayments(t, false)
			rs, client := redisStore(t, srv, redis.Options{})
			store := tc.wrap(rs)
			act := Action{Tenant: "acme", Operation: "charge", Key: tc.name}
			req, _ := http.NewRequest("POST", p.URL, nil)
			dead, err := rs.Reserve(t.Context(), ledger.ReserveRequest{Key: act,
				Fingerprint: ledger.Fingerprint("POST", req.URL, nil, nil, []byte("x")),
				Owner:       "dead", Lease: 50 * time.Millisecond, Nonce: ledger.NewNonce(), MarksSending: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := rs.MarkSending(t.Context(), act, dead.Token); err != nil {
				t.Fatal(err)
			}
			redistest.WaitServerTime(t, client, 50*time.Millisecond) // the owner died

			var b struct {
				resp *http.Response
				err  error
			}
			var reconciles atomic.Int32
			var worker func(owner string) *Transport
			worker = func(owner string) *Transport {
				return New(Config{Ledger: LedgerConfig{Store: store, Owner: owner, Lease: lease,
					Reconciler: func(ctx context.Context, r ledger.Record) (ledger.Resolution, error) {
						if reconciles.Add(1) == 1 { // A: slower than its lease
							redistest.WaitServerTime(t, client, slow)
							b.resp, b.err = chargeTo(t, worker("B"), p.URL, act, "x")
						}
						return ledger.Resolution{State: ledger.StateFailed, Reason: "not found at the provider"}, nil
					}}})
			}
			a, aErr := chargeTo(t, worker("A"), p.URL, act, "x")
			if effects, _ := p.total(); effects != 1 {
				r := stateOf(t, store, act)
				t.Fatalf("effects %d, history %+v; want 1", effects, r.Attempts)
			}
			winner, loser, loserErr := a, b.resp, b.err
			if tc.wantB == nil {
				winner, loser, loserErr = b.resp, a, aErr
			} else if b.err != nil && !errors.Is(b.err, tc.wantB) {
				t.Fatalf("B: %v; want %v", b.err, tc.wantB)
			}
			if winner == nil || winner.StatusCode != 201 {
				t.Fatalf("the owner's answer %v; want 201", winner)
			}
			winner.Body.Close()
			if loser != nil || !errors.Is(loserErr, ErrPending) {
				t.Fatalf("the other worker: response %v, error %v; want ErrPending, nothing sent", loser, loserErr)
			}
			if aErr == nil && tc.wantB == nil {
				t.Fatal("A sent after B took the action over")
			}
			if r := stateOf(t, store, act); r.State != ledger.StateCompleted {
				t.Fatalf("record %v; want completed", r.State)
			}
		})
	}
}

// brokenKeepAlive is a raw HTTP/1.1 server that answers its first request
// on a connection, then reads the second (applying it), closes its
// listener, so that a re-dial fails, and drops the connection unanswered.
type brokenKeepAlive struct {
	ln      net.Listener
	applied atomic.Int32
	done    chan struct{}
}

func newBrokenKeepAlive(t *testing.T) *brokenKeepAlive {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &brokenKeepAlive{ln: ln, done: make(chan struct{})}
	t.Cleanup(func() { ln.Close(); <-s.done })
	go s.serve()
	return s
}

func (s *brokenKeepAlive) serve() {
	defer close(s.done)
	conn, err := s.ln.Accept()
	if err != nil {
		return
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		if n == 1 {
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
			continue
		}
		s.applied.Add(1)
		s.ln.Close()
		return
	}
}

func TestKeyedPUTResentByNetHTTPIsMaybeApplied(t *testing.T) {
	// Every method is traced, so a re-send by net/http counts as maybe
	// applied. Failure pinned: only methods that are not idempotent
	// were traced. net/http re-sends a PUT carrying Idempotency-Key and
	// GetBody after a kept-alive connection breaks; when the re-dial
	// failed the dial error made the attempt not-sent: applied once at
	// the provider, MaybeApplied false, ledger state failed.
	srv := newBrokenKeepAlive(t)
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	url := "http://" + srv.ln.Addr().String() + "/v1/orders/1"
	warm, _ := http.NewRequest("GET", url, nil)
	resp, err := base.RoundTrip(warm) // a kept-alive connection to reuse
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	store := ledger.NewMemory(ledger.MemoryConfig{})
	tr, _ := newFakeTransport(Config{Base: base, Ledger: LedgerConfig{Store: store}, MaxAttempts: 1})
	_, err = send(WithAction(context.Background(), order), t, tr, "PUT", url, "x")
	e, ok := errors.AsType[*Error](err)
	if !ok {
		t.Fatalf("error %v; want an *Error", err)
	}
	if srv.applied.Load() != 1 || !e.MaybeApplied {
		t.Fatalf("applied %d, outcome %+v; want applied once and MaybeApplied", srv.applied.Load(), e.Outcome)
	}
	if r := stateOf(t, store, order); r.State != ledger.StateUncertain {
		t.Fatalf("record %v; want uncertain, not failed", r.State)
	}
}

// rawHead serves one connection: it reads the request head as sent, line
// by line, answers 201 and closes.
func rawHead(t *testing.T) (url string, head <-chan []string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	heads := make(chan []string, 1)
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		var lines []string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\r\n" {
				break
			}
			lines = append(lines, strings.TrimRight(line, "\r\n"))
		}
		heads <- lines
		io.WriteString(conn, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	}()
	return "http://" + ln.Addr().String() + "/v1/pings", heads
}

func TestBodilessUnkeyedPOSTIsSentWithContentLengthZero(t *testing.T) {
	// A bodiless POST goes out with Content-Length: 0, as with bare
	// net/http. Failure pinned: to keep net/http from re-sending it,
	// a bodiless POST that is not safe to repeat got an empty stand-in
	// body and went out Transfer-Encoding: chunked; bare net/http sends
	// Content-Length: 0, and servers that require a length answer 411.
	for _, tc := range []struct {
		name string
		cfg  Config
		key  bool // the generated key goes out
	}{
		{"generated key", Config{}, true},
		{"no key header", Config{OmitKey: true}, false},
		{"X-Idempotency-Key", Config{KeyHeader: "X-Idempotency-Key"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, heads := rawHead(t)
			base := &http.Transport{}
			t.Cleanup(base.CloseIdleConnections)
			tc.cfg.Base = base
			tr, _ := newFakeTransport(tc.cfg)
			resp, err := send(context.Background(), t, tr, "POST", url, "")
			if err != nil {
				t.Fatal(err)
			}
			o := finalOutcome(t, resp)
			head := <-heads
			var length, chunked, key bool
			for _, line := range head[1:] {
				name, value, _ := strings.Cut(line, ":")
				switch value = strings.TrimSpace(value); {
				case strings.EqualFold(name, "Content-Length"):
					length = value == "0"
				case strings.EqualFold(name, "Transfer-Encoding"):
					chunked = true
				case strings.EqualFold(name, cmp.Or(tc.cfg.KeyHeader, DefaultKeyHeader)):
					key = value == o.Key
				}
			}
			if !length || chunked || key != tc.key {
				t.Fatalf("request head %q; want Content-Length: 0, no Transfer-Encoding, key sent %v", head, tc.key)
			}
		})
	}
}

func TestBodilessUnkeyedPOSTOverHTTP2HasContentLengthZero(t *testing.T) {
	// The same over HTTP/2. Failure pinned: the empty stand-in body went
	// out as a DATA frame without content-length.
	type seen struct {
		proto  string
		length int64
		header string
		key    string
	}
	got := make(chan seen, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Proto, r.ContentLength, r.Header.Get("Content-Length"), r.Header.Get(DefaultKeyHeader)}
		w.WriteHeader(http.StatusCreated)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tr, _ := newFakeTransport(Config{Base: srv.Client().Transport})
	resp, err := send(context.Background(), t, tr, "POST", srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	o := finalOutcome(t, resp)
	s := <-got
	if s.proto != "HTTP/2.0" || s.length != 0 || s.key != o.Key {
		t.Fatalf("server saw %+v; want HTTP/2 with content-length 0 and the key %q", s, o.Key)
	}
}

// deadlineLimiter records the deadline of every Allow's context, answers
// its decisions in turn (the last repeats), and with block waits on the
// context instead, as a fair queue waits for the call's slot.
type deadlineLimiter struct {
	mu        sync.Mutex // guards all fields
	decisions []limiter.Decision
	block     bool
	deadlines []time.Time
}

func (l *deadlineLimiter) Allow(ctx context.Context, _ limiter.Request) (limiter.Decision, error) {
	dl, _ := ctx.Deadline()
	l.mu.Lock()
	l.deadlines = append(l.deadlines, dl)
	n := len(l.deadlines)
	l.mu.Unlock()
	if l.block {
		<-ctx.Done()
		return limiter.Decision{}, ctx.Err()
	}
	return l.decisions[min(n, len(l.decisions))-1], nil
}

func (*deadlineLimiter) Cooldown(context.Context, string, time.Time) error { return nil }

func TestLimiterQueueNeverWaitsPastTheCallsBounds(t *testing.T) {
	// The limiter's fair queue never holds a call past MaxWait or
	// Config.Deadline. Failure pinned: with limiter.RedisConfig.Queue,
	// Allow waits for the call's slot up to its context's deadline, which
	// knew nothing of MaxWait or Config.Deadline: the limiter could hold a
	// call past both.
	const tolerance = 150 * time.Millisecond
	near := func(got, want time.Time) bool { return !got.IsZero() && got.Sub(want).Abs() < tolerance }
	t.Run("deadline and MaxWait", func(t *testing.T) {
		p := newProvider(t, status(200))
		lim := &deadlineLimiter{decisions: []limiter.Decision{{RetryAfter: 300 * time.Millisecond}, allow}}
		tr, _ := newFakeTransport(Config{Limiter: lim, MaxWait: 2 * time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		resp, err := send(ctx, t, tr, "GET", p.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		finalOutcome(t, resp)
		// The first ask ends at the call's deadline; the second, after a
		// 300 ms wait on the fake clock, 300 ms earlier.
		if len(lim.deadlines) != 2 || !near(lim.deadlines[0], start.Add(time.Second)) || !near(lim.deadlines[1], start.Add(700*time.Millisecond)) {
			t.Fatalf("Allow deadlines %v after start; want [1s 700ms]", since(start, lim.deadlines))
		}
	})
	t.Run("MaxWait alone", func(t *testing.T) {
		p := newProvider(t, status(200))
		lim := &deadlineLimiter{decisions: []limiter.Decision{allow}}
		tr, _ := newFakeTransport(Config{Limiter: lim, MaxWait: 2 * time.Second})
		start := time.Now()
		resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		finalOutcome(t, resp)
		if len(lim.deadlines) != 1 || !near(lim.deadlines[0], start.Add(2*time.Second)) {
			t.Fatalf("Allow deadlines %v after start; want [2s]", since(start, lim.deadlines))
		}
	})
	t.Run("a queue that never serves the call", func(t *testing.T) {
		p := newProvider(t, status(200))
		lim := &deadlineLimiter{block: true}
		tr := New(Config{Limiter: lim, MaxWait: 100 * time.Millisecond})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := send(ctx, t, tr, "GET", p.URL, "")
		// The queue refused nothing and named no time: the call's own
		// bound (MaxWait) ended it, not a rate limit.
		if elapsed := time.Since(start); !errors.Is(err, ErrWaitTooLong) || errors.Is(err, ErrRateLimited) || elapsed > 100*time.Millisecond+tolerance {
			t.Fatalf("error %v after %v; want ErrWaitTooLong, not ErrRateLimited, once MaxWait (100ms) is spent", err, elapsed)
		}
		if len(p.requests()) != 0 {
			t.Fatal("sent without the limiter's admission")
		}
	})
}

// since is each of ts as a duration after start.
func since(start time.Time, ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(start)
	}
	return out
}

func TestResendUsesTheActionsKeyNotTheCallersHeader(t *testing.T) {
	// A resend carries the Action's key, never the caller's header. Failure
	// pinned: when the ledger said "resend under the
	// same provider key" (an uncertain action, or a dead owner's), the
	// Transport sent the caller's header; a client putting a fresh key on
	// every call (stripe-go does) made the resend new work: 2 requests, 2
	// effects at a key-honouring provider. The key sent is the Action's,
	// a pure function of it (Action.IdempotencyKey), on every call.
	withHeader := func(key string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set(DefaultKeyHeader, key) }
	}
	charge := func(t *testing.T, tr http.RoundTripper, url string, set func(*http.Request)) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(WithAction(context.Background(), order), "POST", url, strings.NewReader("x"))
		set(req)
		return tr.RoundTrip(req)
	}
	t.Run("resend of an uncertain action", func(t *testing.T) {
		p := newPayments(t, true)
		p.fault = func(n int) string { // applied, answer lost
			if n == 1 {
				return "lost"
			}
			return ""
		}
		store := ledger.NewMemory(ledger.MemoryConfig{})
		tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store}, KeysHonoured: true, MaxAttempts: 1})
		if _, err := charge(t, tr, p.URL, withHeader("sdk-key-1")); !errors.Is(err, ErrAttemptsExhausted) {
			t.Fatalf("first call: %v; want a give-up", err)
		}
		resp, err := charge(t, tr, p.URL, withHeader("sdk-key-2"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if effects, calls := p.total(); resp.StatusCode != 201 || effects != 1 || calls != 2 {
			t.Fatalf("status %d, effects %d, calls %d; want the resend answered from the first effect", resp.StatusCode, effects, calls)
		}
	})
	t.Run("send after a reconcile", func(t *testing.T) {
		p := newPayments(t, true)
		var skew atomic.Int64 // the store's clock, ahead of the real one
		store := ledger.NewMemory(ledger.MemoryConfig{Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
		// A dead owner sent the action under its key and the provider
		// applied it; its lease has run out.
		req, _ := http.NewRequest("POST", p.URL, nil)
		dead, err := store.Reserve(t.Context(), ledger.ReserveRequest{Key: order, Lease: time.Millisecond,
			Fingerprint: ledger.Fingerprint("POST", req.URL, nil, nil, []byte("x")), Nonce: ledger.NewNonce(), MarksSending: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.MarkSending(t.Context(), order, dead.Token); err != nil {
			t.Fatal(err)
		}
		applied, err := charge(t, http.DefaultTransport, p.URL, withHeader(order.IdempotencyKey()))
		if err != nil {
			t.Fatal(err)
		}
		applied.Body.Close()
		skew.Store(int64(time.Second))
		// A Reconciler that cannot see the charge says it never happened.
		tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: store, Reconciler: func(context.Context, ledger.Record) (ledger.Resolution, error) {
			return ledger.Resolution{State: ledger.StateFailed}, nil
		}}, KeysHonoured: true})
		resp, err := charge(t, tr, p.URL, withHeader("sdk-key-2"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if r := stateOf(t, store, order); r.Attempts[len(r.Attempts)-2].Class != "reconcile" {
			t.Fatalf("history %+v; want a reconcile grant", r.Attempts)
		}
		if effects, calls := p.total(); resp.StatusCode != 201 || effects != 1 || calls != 2 {
			t.Fatalf("status %d, effects %d, calls %d; want the send answered from the first effect", resp.StatusCode, effects, calls)
		}
	})
}
