package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrybudget/retrybudget/internal/redistest"
)

func TestReserveLostReplyIsRecognised(t *testing.T) {
	// A Reserve whose reply was lost is recognised as the caller's own:
	// go-redis re-sends an EVALSHA whose reply timed out, and the first run
	// may already have happened. With a 100 ms ReadTimeout and Redis frozen
	// 150 ms, a store that does not recognise it is refused by its own
	// reservation (pending); frozen 250 ms it fails while the record is
	// written, and after the lease the never-sent action comes back as
	// uncertain.
	srv := redistest.Start(t)
	for _, frozen := range []time.Duration{150 * time.Millisecond, 250 * time.Millisecond} {
		t.Run(frozen.String(), func(t *testing.T) {
			client := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 100 * time.Millisecond})
			t.Cleanup(func() { client.Close() })
			s := mustRedis(t, client, RedisConfig{Prefix: redistest.Prefix(t)})
			if err := client.Ping(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			req := ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Lease: redisShort,
				Nonce: NewNonce(), MarksSending: true}

			thaw := srv.Freeze(t)
			time.AfterFunc(frozen, thaw) // the fault: Redis hangs this long
			res, err := s.Reserve(t.Context(), req)
			if err != nil {
				// Every re-send timed out too: the caller sends the same
				// request again once Redis answers.
				t.Logf("Reserve during the freeze: %v; sending it again", err)
				res, err = s.Reserve(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
			}
			if res.Verdict != VerdictCreated || res.Token == 0 {
				t.Fatalf("verdict %s token %d (path %q); want this call's own grant", res.Verdict, res.Token, res.Path)
			}
			rec, err := s.Get(t.Context(), keyA)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Attempts) != 1 {
				t.Fatalf("history %+v; want one grant", rec.Attempts)
			}

			// The owner gave up before sending anything (it never marked
			// the action): once its lease ends, the action is provably
			// unsent and the next request sends it.
			redistest.WaitServerTime(t, client, redisShort)
			next, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w2", Nonce: NewNonce(), MarksSending: true})
			if err != nil {
				t.Fatal(err)
			}
			if next.Verdict != VerdictRetry {
				t.Fatalf("after the lease: %s (path %q); want retry: nothing was sent", next.Verdict, next.Path)
			}
		})
	}
}

// redisShort is the lease the freeze tests wait out.
const redisShort = 150 * time.Millisecond

func TestRedisCallsReturnAtTheirDeadlineWhenFrozen(t *testing.T) {
	// Every store call returns at its context's deadline, even on a client
	// without ContextTimeoutEnabled: such a client holds a command on the
	// wire for its ReadTimeout (3 s by default) and re-sends it, whatever
	// the deadline, so a frozen Redis would hold a settling Transport for
	// seconds past its deadline.
	const bound, slack = 100 * time.Millisecond, 150 * time.Millisecond
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr}) // ContextTimeoutEnabled false, the default
	t.Cleanup(func() { client.Close() })
	s := mustRedis(t, client, RedisConfig{Prefix: redistest.Prefix(t)})
	res, err := s.Reserve(t.Context(), ReserveRequest{Key: keyA, Fingerprint: fpA, Owner: "w1", Nonce: NewNonce(), MarksSending: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Freeze(t)
	for _, op := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"reserve", func(ctx context.Context) error {
			_, err := s.Reserve(ctx, ReserveRequest{Key: Key{Tenant: "acme", Operation: "charge", Key: "order-2"}, Fingerprint: fpA, Nonce: NewNonce()})
			return err
		}},
		{"renew", func(ctx context.Context) error { return s.Renew(ctx, keyA, res.Token, 0) }},
		{"mark sending", func(ctx context.Context) error { return s.MarkSending(ctx, keyA, res.Token) }},
		{"attempt", func(ctx context.Context) error { _, err := s.AddAttempt(ctx, keyA, res.Token, "ok"); return err }},
		{"complete", func(ctx context.Context) error { return s.Complete(ctx, keyA, res.Token, Outcome{Status: 201}) }},
		{"fail", func(ctx context.Context) error { return s.Fail(ctx, keyA, res.Token, Failure{}) }},
		{"get", func(ctx context.Context) error { _, err := s.Get(ctx, keyA); return err }},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), bound)
		start := time.Now()
		err := op.call(ctx)
		elapsed := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || elapsed > bound+slack {
			t.Errorf("%s: %v after %v; want the context's deadline error within %v", op.name, err, elapsed, bound+slack)
		}
	}
}
