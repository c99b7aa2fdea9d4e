package ledger

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

// argsRecorder is a go-redis hook that keeps every argument of every
// command the client sends: what MONITOR and SLOWLOG on the server would
// show.
type argsRecorder struct {
	mu   sync.Mutex // guards args
	args []string
}

func (a *argsRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (a *argsRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		a.keep(cmd)
		return next(ctx, cmd)
	}
}

func (a *argsRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			a.keep(c)
		}
		return next(ctx, cmds)
	}
}

func (a *argsRecorder) keep(cmd redis.Cmder) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, v := range cmd.Args() {
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		a.args = append(a.args, fmt.Sprint(v))
	}
}

// holding returns the arguments that contain s.
func (a *argsRecorder) holding(s string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, v := range a.args {
		if strings.Contains(v, s) {
			out = append(out, v)
		}
	}
	return out
}

// TestRedisBareFingerprintNeverSent pins that the request's bare
// fingerprint, a hash over a body that may hold card data, is never a
// command argument, as MONITOR and SLOWLOG would keep it: only its sealed
// forms go to Redis, on every path of Reserve.
func TestRedisBareFingerprintNeverSent(t *testing.T) {
	client := redistest.Client(t)
	rec := &argsRecorder{}
	client.AddHook(rec)
	s := mustRedis(t, client, RedisConfig{Prefix: redistest.Prefix(t)})
	fp := Fingerprint("POST", nil, nil, nil, []byte("number=4242424242424242&cvc=123"))
	ctx := t.Context()

	res, err := s.Reserve(ctx, ReserveRequest{Key: keyA, Fingerprint: fp, MarksSending: true})
	if err != nil || res.Verdict != VerdictCreated {
		t.Fatalf("Reserve: %s, %v", res.Verdict, err)
	}
	if got, err := s.Reserve(ctx, ReserveRequest{Key: keyA, Fingerprint: fp}); err != nil || got.Verdict != VerdictPending {
		t.Fatalf("second Reserve: %s, %v", got.Verdict, err)
	}
	if err := s.MarkSending(ctx, keyA, res.Token); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, keyA, res.Token, Outcome{Status: 201}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Reserve(ctx, ReserveRequest{Key: keyA, Fingerprint: fp}); err != nil || got.Verdict != VerdictReplayed {
		t.Fatalf("third Reserve: %s, %v", got.Verdict, err)
	}
	if leaked := rec.holding(fp); len(leaked) > 0 {
		t.Fatalf("the bare fingerprint went to Redis in %d arguments", len(leaked))
	}
}
