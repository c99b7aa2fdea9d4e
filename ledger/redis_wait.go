package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated reports a Redis write that fewer replicas than
// RedisConfig.WaitReplicas acknowledged within RedisConfig.WaitTimeout:
// the primary has it, but a failover now could lose it.
var ErrNotReplicated = errors.New("ledger: redis write not acknowledged by enough replicas")

// replicated runs write on one connection and, when it reports a write
// and RedisConfig.WaitReplicas is set, waits on that same connection for
// the replicas to acknowledge it. WAIT counts the writes of the connection
// it runs on, so the write and the WAIT cannot go through a pool.
func (r *Redis) replicated(ctx context.Context, write func(redis.Scripter) (bool, error)) error {
	if r.wait <= 0 {
		_, err := write(r.scripts)
		return err
	}
	conn := r.client.(*redis.Client).Conn() // NewRedis checked the type
	defer conn.Close()
	wrote, err := write(conn)
	if err != nil || !wrote {
		return err
	}
	n, err := conn.Wait(ctx, r.wait, r.waitTO).Result()
	if err != nil {
		return fmt.Errorf("ledger: redis wait: %w", err)
	}
	if n < int64(r.wait) {
		return fmt.Errorf("%w: %d of %d within %s", ErrNotReplicated, n, r.wait, r.waitTO)
	}
	return nil
}

// abandon gives up a grant whose replication was not acknowledged, made
// with the script's verdict: the caller will not act on it, so the record
// is settled now instead of waiting out a lease nobody holds. A grant to
// send for the first time, or again after a failure without effect, is
// recorded failed (no effect) and runs again later. A takeover of an
// action that may already have been sent (reconcile, resend) is put back
// as uncertain: recording it failed would hand it to the next caller to
// send again without asking the Reconciler. Best effort: if it fails too,
// the lease runs out as after a crash.
func (r *Redis) abandon(ctx context.Context, k Key, verdict, token string) {
	tok, err := strconv.ParseInt(token, 10, 64)
	if err != nil || tok == 0 {
		return
	}
	f := Failure{Reason: "reservation not acknowledged by replicas"}
	if v, _ := ParseVerdict(verdict); v == VerdictReconcile || v == VerdictResend {
		f.EffectPossible = true
	}
	_ = r.Fail(ctx, k, tok, f)
}
