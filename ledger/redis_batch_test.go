package ledger

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// scripted reports whether cmd runs a script: the round trips counted,
// leaving out the commands go-redis sends to set up a new connection.
func scripted(cmd redis.Cmder) bool { return cmd.Name() == "evalsha" || cmd.Name() == "eval" }

// holdHook is a go-redis hook that counts the round trips running scripts
// (a command or a pipeline each) and, once armed, holds the first EVALSHA it sees until
// release is closed, so that the calls made meanwhile queue for one batch.
// With lose set, a pipeline runs and then reports lose for every command,
// as a reply lost after Redis ran them.
type holdHook struct {
	trips   atomic.Int64
	evals   atomic.Int64 // EVAL commands, alone or in a pipeline
	armed   atomic.Bool
	held    chan struct{} // closed when the first EVALSHA is held
	release chan struct{}
	once    sync.Once
	lose    error
}

func newHoldHook() *holdHook {
	return &holdHook{held: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if scripted(cmd) {
			h.trips.Add(1)
		}
		if cmd.Name() == "eval" {
			h.evals.Add(1)
		}

		if h.armed.Load() && cmd.Name() == "evalsha" {
			first := false
			h.once.Do(func() { first = true })
			if first {
				close(h.held)
				<-h.release
			}
		}
		return next(ctx, cmd)
	}
}

func (h *holdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if scripted(cmds[0]) {
			h.trips.Add(1)
		}
		for _, c := range cmds {
			if c.Name() == "eval" {
				h.evals.Add(1)
			}
		}

		err := next(ctx, cmds)
		if h.lose != nil && cmds[0].Name() == "evalsha" {
			for _, c := range cmds {
				c.SetErr(h.lose)
			}
			return h.lose
		}
		return err
	}
}

// batchRig is a Redis store with n actions reserved and every script
// loaded, and the hook that holds its next round trip.
type batchRig struct {
	s      *Redis
	hook   *holdHook
	keys   []Key
	tokens []int64
}

func newBatchRig(t *testing.T, client *redis.Client, n int) *batchRig {
	t.Helper()
	r := &batchRig{hook: newHoldHook()}
	client.AddHook(r.hook)
	r.s = mustRedis(t, client, RedisConfig{Prefix: redistest.Prefix(t)})
	for i := range n {
		k := Key{Tenant: "t", Operation: "charge", Key: "batch-" + strconv.Itoa(i)}
		res, err := r.s.Reserve(t.Context(), ReserveRequest{Key: k, Fingerprint: fpA, Owner: "w1", MarksSending: true})
		if err != nil || res.Token == 0 {
			t.Fatalf("Reserve: %v, %+v", err, res)
		}
		r.keys, r.tokens = append(r.keys, k), append(r.tokens, res.Token)
	}
	// No call below meets NOSCRIPT.
	for _, sc := range []*redis.Script{r.s.mark, r.s.complete, r.s.attempt, r.s.fail, r.s.renew} {
		if err := sc.Load(t.Context(), client).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// together runs call(0) and, while its round trip is held, call(1) to
// call(n-1), which all queue for the next batch; then releases the hold
// and returns every call's error and the round trips they made.
func (r *batchRig) together(t *testing.T, call func(i int) error) ([]error, int64) {
	t.Helper()
	n := len(r.keys)
	errs := make([]error, n)
	before := r.hook.trips.Load()
	r.hook.armed.Store(true)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = call(0) })
	<-r.hook.held
	for i := 1; i < n; i++ {
		wg.Go(func() { errs[i] = call(i) })
	}
	r.waitQueued(t, n-1)
	close(r.hook.release)
	wg.Wait()
	return errs, r.hook.trips.Load() - before
}

// waitQueued waits until n calls wait for the store's next batch.
func (r *batchRig) waitQueued(t *testing.T, n int) {
	t.Helper()
	b := r.s.scripts.(batchScripter).batch
	for end := time.Now().Add(time.Minute); b.Waiting() < n; runtime.Gosched() {
		if time.Now().After(end) {
			t.Fatalf("%d calls queued; want %d", b.Waiting(), n)
		}
	}
}

func TestRedisBatchSharesRoundTrips(t *testing.T) {
	const n = 8
	r := newBatchRig(t, redistest.Client(t), n)
	errs, trips := r.together(t, func(i int) error {
		return r.s.MarkSending(t.Context(), r.keys[i], r.tokens[i])
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("MarkSending %d: %v", i, err)
		}
	}
	// The first call's own round trip, then one pipeline for the rest.
	if trips != 2 {
		t.Fatalf("%d calls made %d round trips; want 2", n, trips)
	}
	if calls, batches := r.s.sharedScripts(); calls != n-1 || batches != 1 {
		t.Fatalf("shared: %d calls in %d batches; want %d in 1", calls, batches, n-1)
	}
	for _, k := range r.keys {
		rec, err := r.s.Get(t.Context(), k)
		if err != nil || !rec.Sending {
			t.Fatalf("%s: %v, sending %v; want marked", k.Key, err, rec.Sending)
		}
	}
}

func TestRedisBatchFencedOutCallFailsAlone(t *testing.T) {
	const n, stale = 6, 3
	r := newBatchRig(t, redistest.Client(t), n)
	errs, _ := r.together(t, func(i int) error {
		tok := r.tokens[i]
		if i == stale {
			tok++ // as after another owner's takeover
		}
		return r.s.Complete(t.Context(), r.keys[i], tok, Outcome{Status: 201})
	})
	for i, err := range errs {
		switch {
		case i == stale && !errors.Is(err, ErrNotOwner):
			t.Errorf("stale Complete: %v; want ErrNotOwner", err)
		case i != stale && err != nil:
			t.Errorf("Complete %d beside a stale one: %v; want nil", i, err)
		}
	}
	for i, k := range r.keys {
		rec, err := r.s.Get(t.Context(), k)
		want := StateCompleted
		if i == stale {
			want = StateInProgress
		}
		if err != nil || rec.State != want {
			t.Errorf("%s: %v, %s; want %s", k.Key, err, rec.State, want)
		}
	}
	if calls, _ := r.s.sharedScripts(); calls != n-1 {
		t.Fatalf("%d calls shared a round trip; want %d", calls, n-1)
	}
}

func TestRedisBatchLostReplyReachesEveryCall(t *testing.T) {
	const n = 5
	r := newBatchRig(t, redistest.Client(t), n)
	lost := errors.New("reply lost")
	r.hook.lose = lost
	errs, _ := r.together(t, func(i int) error {
		return r.s.MarkSending(t.Context(), r.keys[i], r.tokens[i])
	})
	// The first call went alone, its reply intact; every call of the
	// batch gets the lost reply's error, as a lone call would, and Redis
	// did run them: "maybe written" is the truth.
	if errs[0] != nil {
		t.Fatalf("lone call: %v", errs[0])
	}
	for i := 1; i < n; i++ {
		if !errors.Is(errs[i], lost) || errors.Is(errs[i], ErrNotOwner) {
			t.Errorf("call %d of the batch: %v; want the lost reply's error", i, errs[i])
		}
		rec, err := r.s.Get(t.Context(), r.keys[i])
		if err != nil || !rec.Sending {
			t.Errorf("%s: %v, sending %v; want written", r.keys[i].Key, err, rec.Sending)
		}
	}
}

func TestRedisBatchCallerDeadlineEndsWaitOnFrozenRedis(t *testing.T) {
	// The first call's round trip ends with its short deadline; the calls
	// queued behind it then go as one batch into a frozen Redis, and each
	// leaves at its own deadline, well before twice it.
	const n = 4
	const lead, bound = 200 * time.Millisecond, time.Second
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, MaxRetries: -1, ReadTimeout: time.Minute})
	t.Cleanup(func() { client.Close() })
	r := newBatchRig(t, client, n)
	close(r.hook.release) // hold nothing: the frozen server holds
	defer func() { calls, _ := r.s.sharedScripts(); t.Logf("%d calls went in a shared round trip", calls) }()
	thaw := srv.Freeze(t)
	defer thaw()

	errs := make([]error, n)
	took := make([]time.Duration, n)
	var wg sync.WaitGroup
	call := func(i int, d time.Duration) {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		start := time.Now()
		errs[i] = r.s.MarkSending(ctx, r.keys[i], r.tokens[i])
		took[i] = time.Since(start)
	}
	wg.Go(func() { call(0, lead) })
	b := r.s.scripts.(batchScripter).batch
	for end := time.Now().Add(time.Minute); !b.Busy(); runtime.Gosched() {
		if time.Now().After(end) {
			t.Fatal("the first call never started")
		}
	}
	for i := 1; i < n; i++ {
		wg.Go(func() { call(i, bound) })
	}
	wg.Wait()
	for i := 1; i < n; i++ {
		if !errors.Is(errs[i], context.DeadlineExceeded) {
			t.Errorf("call %d: %v; want its deadline", i, errs[i])
		}
		if took[i] >= 2*bound {
			t.Errorf("call %d waited %v; its bound is %v", i, took[i], bound)
		}
	}
}

func TestRedisBatchNoScriptRunsAgainAsEval(t *testing.T) {
	// Redis lost its scripts (a restart, SCRIPT FLUSH): every EVALSHA of
	// a batch is answered NOSCRIPT, and each call sends its script again
	// as EVAL, as redis.Script.Run does for one.
	const n = 6
	client := redistest.Start(t).Client(t)
	r := newBatchRig(t, client, n)
	if err := client.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	errs, _ := r.together(t, func(i int) error {
		return r.s.MarkSending(t.Context(), r.keys[i], r.tokens[i])
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("MarkSending %d after SCRIPT FLUSH: %v", i, err)
		}
	}
	for _, k := range r.keys {
		rec, err := r.s.Get(t.Context(), k)
		if err != nil || !rec.Sending {
			t.Errorf("%s: %v, sending %v; want marked", k.Key, err, rec.Sending)
		}
	}
	// Every call met NOSCRIPT but those that came after the first EVAL
	// loaded the script: at least the lone one and the first batch's.
	if calls, _ := r.s.sharedScripts(); calls < n-1 {
		t.Fatalf("%d script runs shared a round trip; want at least %d", calls, n-1)
	}
	if evals := r.hook.evals.Load(); evals < 2 {
		t.Fatalf("%d EVAL sent; want NOSCRIPT answered by EVAL", evals)
	}
}
