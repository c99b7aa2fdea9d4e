package ledger

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/groupcommit"
)

// The script runs of concurrent actions share round trips: the first goes
// at once, alone, and those that arrive while it is in flight go together
// in one pipeline right after it (a group commit; see internal/groupcommit).
// Every action has a record of its own, in its own cluster slot, so no
// script spans two actions: a batch is a pipeline of EVALSHA, one per
// call, each fenced by its own token (or, for Reserve, carrying its own
// nonce), and each call reads its own reply. A Lua error in one command
// rolls back nothing before it and fails nothing after it; a reply lost
// for the pipeline (a cut connection, a timeout) reaches every call in it
// as the same error a lost reply of a lone call gives, and every one of
// those writes may or may not have happened. On a cluster or a ring the
// client splits the pipeline by node. A command answered NOSCRIPT is sent
// again as EVAL, in the next batch, as redis.Script.Run does for one.

// scriptCall is one script run carried by a batch: the arguments of its
// EVALSHA (or EVAL), and its reply once the batch is back.
type scriptCall struct {
	eval   bool   // EVAL with the source, after NOSCRIPT; else EVALSHA
	script string // the SHA-1 digest, or the source with eval
	keys   []string
	args   []any

	// val and err are the reply, written by runScripts.
	val any
	err error
}

// batchScripter is the redis.Scripter the store's scripts run through
// when batching is on: EVALSHA and EVAL join the store's batch, every
// other command goes to the client as it is.
type batchScripter struct {
	redis.UniversalClient
	batch *groupcommit.Batcher[*scriptCall]
}

// newScripter returns what r's scripts run through: the client itself
// when maxBatch is 1 or replicas are waited for (WAIT counts the writes of
// one connection, which a shared pipeline would mix), else a batchScripter
// whose batches carry at most maxBatch calls (zero: DefaultMaxBatch).
func newScripter(client redis.UniversalClient, maxBatch, waitReplicas int) redis.Scripter {
	if maxBatch == 1 || waitReplicas > 0 {
		return client
	}
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	return batchScripter{
		UniversalClient: client,
		batch:           groupcommit.New(maxBatch, 0, func(ctx context.Context, calls []*scriptCall) { runScripts(ctx, client, calls) }),
	}
}

// DefaultMaxBatch is the most store calls of concurrent actions that one
// round trip carries when RedisConfig.MaxBatch (or pgledger's
// Config.MaxBatch) is zero.
const DefaultMaxBatch = groupcommit.DefaultMax

// EvalSha runs the script with digest sha in the next batch, or at once
// when none is in flight.
func (s batchScripter) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return s.do(ctx, &scriptCall{script: sha, keys: keys, args: args})
}

// Eval runs src in the next batch, or at once when none is in flight.
func (s batchScripter) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	return s.do(ctx, &scriptCall{eval: true, script: src, keys: keys, args: args})
}

// do runs c through the batch and returns its reply as a command's.
func (s batchScripter) do(ctx context.Context, c *scriptCall) *redis.Cmd {
	var alone *redis.Cmd
	err := s.batch.Do(ctx, c, func(ctx context.Context) {
		if c.eval {
			alone = s.UniversalClient.Eval(ctx, c.script, c.keys, c.args...)
		} else {
			alone = s.UniversalClient.EvalSha(ctx, c.script, c.keys, c.args...)
		}
	})
	if alone != nil {
		return alone
	}
	cmd := redis.NewCmd(ctx)
	if err != nil {
		// The caller gave up; the batch's late reply is not read.
		cmd.SetErr(err)
		return cmd
	}
	cmd.SetVal(c.val)
	cmd.SetErr(c.err)
	return cmd
}

// runScripts sends calls in one pipeline and writes each its own reply.
// The pipeline's error is its first command's that failed; every command
// carries its own, so one call's error is never another's.
func runScripts(ctx context.Context, client redis.UniversalClient, calls []*scriptCall) {
	cmds := make([]*redis.Cmd, len(calls))
	_, _ = client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range calls {
			if c.eval {
				cmds[i] = p.Eval(ctx, c.script, c.keys, c.args...)
			} else {
				cmds[i] = p.EvalSha(ctx, c.script, c.keys, c.args...)
			}
		}
		return nil
	})
	for i, c := range calls {
		c.val, c.err = cmds[i].Val(), cmds[i].Err()
	}
}

// sharedScripts returns how many script runs went in a shared round trip,
// and in how many such round trips, for tests; zero without batching.
func (r *Redis) sharedScripts() (calls, batches int64) {
	if s, ok := r.scripts.(batchScripter); ok {
		return s.batch.Shared()
	}
	return 0, 0
}
