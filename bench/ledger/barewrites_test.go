package ledgerbench

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/groupcommit"
	"github.com/retrybudget/retrybudget/ledger"
)

// bareWrites is a floor under every ledger that makes a durable write
// before the send and another after it: the Transport without a ledger,
// wrapped so that each action makes two store writes that carry nothing
// of a record and decide nothing, shared across concurrent actions as the
// ledger's stores share theirs (ledger.DefaultMaxBatch to a round trip).
// A ledger does at least this work and more: keying, fingerprint, seal,
// the read-decide-write of a grant, the record itself.
type bareWrites struct {
	next  http.RoundTripper
	batch *groupcommit.Batcher[*bareWrite]
	// write makes the writes of n actions in one round trip.
	write func(ctx context.Context, n int) error
}

// bareWrite is one action's write, and its result.
type bareWrite struct{ err error }

func newBareWrites(next http.RoundTripper, write func(ctx context.Context, n int) error) *bareWrites {
	b := &bareWrites{next: next, write: write}
	b.batch = groupcommit.New(ledger.DefaultMaxBatch, 0, func(ctx context.Context, items []*bareWrite) {
		err := write(ctx, len(items))
		for _, w := range items {
			w.err = err
		}
	})
	return b
}

// RoundTrip writes, sends, and writes again.
func (b *bareWrites) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := b.one(req.Context()); err != nil {
		return nil, err
	}
	resp, err := b.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if err := b.one(context.WithoutCancel(req.Context())); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// one makes one action's write, in the next batch or alone.
func (b *bareWrites) one(ctx context.Context) error {
	w := &bareWrite{}
	if err := b.batch.Do(ctx, w, func(ctx context.Context) { w.err = b.write(ctx, 1) }); err != nil {
		return err
	}
	return w.err
}

// redisBareWrite returns a write of n actions to Redis: one pipeline of n
// runs of a script that writes nothing, the cheapest step a script store
// can make per action.
func redisBareWrite(t *testing.T, client redis.UniversalClient) func(ctx context.Context, n int) error {
	script := redis.NewScript(`return 1`)
	if err := script.Load(t.Context(), client).Err(); err != nil {
		t.Fatal(err)
	}
	var seq atomic.Int64
	return func(ctx context.Context, n int) error {
		_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for range n {
				// A key per action, as each ledger record has its own slot.
				script.EvalSha(ctx, p, []string{"bare:{" + strconv.FormatInt(seq.Add(1), 10) + "}"})
			}
			return nil
		})
		return err
	}
}

// pgBareWrite returns a write of n actions to PostgreSQL: one statement
// inserting n one-column rows and its commit, the cheapest durable write
// of n rows.
func pgBareWrite(t *testing.T, pool *pgxpool.Pool) func(ctx context.Context, n int) error {
	if _, err := pool.Exec(t.Context(), `CREATE TABLE IF NOT EXISTS bare_writes (id bigint)`); err != nil {
		t.Fatal(err)
	}
	return func(ctx context.Context, n int) error {
		_, err := pool.Exec(ctx, `INSERT INTO bare_writes SELECT generate_series(1, $1::int)`, n)
		return err
	}
}
