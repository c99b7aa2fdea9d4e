package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/ledgertest"
)

// holdOnRedis reserves k and fails it with a possible effect, which
// enters it in the held index.
func holdOnRedis(t *testing.T, s *ledger.Redis, k ledger.Key) {
	t.Helper()
	res, err := s.Reserve(t.Context(), ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(t.Context(), k, res.Token, ledger.Failure{EffectPossible: true, Reason: "timeout"}); err != nil {
		t.Fatal(err)
	}
}

// heldKeys lists a page's actions by Key.Key.
func heldKeys(p ledger.HeldPage) []string {
	var out []string
	for _, r := range p.Records {
		out = append(out, r.Key.Key)
	}
	return out
}

func TestRedisHeldIndex(t *testing.T) {
	testHeldIndex(t, redistest.Client(t))
}

// testHeldIndex pins the held index on client: held actions listed
// oldest first, in pages, filtered, counted per tenant and operation, and
// each entry checked against its record.
func testHeldIndex(t *testing.T, client redis.UniversalClient) {
	ctx := t.Context()
	s := ledgertest.Redis(t, client, redistest.Prefix(t))
	serverNow := func() (time.Time, error) { return client.Time(ctx).Result() }
	var order []ledger.Key
	for i, tenant := range []string{"acme", "globex", "acme", "acme", "globex"} {
		k := ledger.Key{Tenant: tenant, Operation: "sms", Key: fmt.Sprintf("a%d", i)}
		holdOnRedis(t, s, k)
		order = append(order, k)
		// Entries are ordered by the server's millisecond of entry: one
		// action per millisecond makes the order the test's.
		ledgertest.WaitClock(t, "redis TIME", 2*time.Millisecond, serverNow)
	}
	// A record in progress under a live lease is not held.
	live := ledger.Key{Tenant: "acme", Operation: "sms", Key: "live"}
	if _, err := s.Reserve(ctx, ledger.ReserveRequest{Key: live, Fingerprint: "fp", Lease: time.Hour}); err != nil {
		t.Fatal(err)
	}

	t.Run("OldestFirstInPages", func(t *testing.T) {
		var got []string
		q := ledger.HeldQuery{Limit: 2}
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatalf("more than 3 pages of 2 for 5 held actions: %v", got)
			}
			p, err := s.Held(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Records) > 2 {
				t.Fatalf("a page of %d records with Limit 2", len(p.Records))
			}
			got = append(got, heldKeys(p)...)
			if p.Next == "" {
				break
			}
			q.After = p.Next
		}
		if want := []string{"a0", "a1", "a2", "a3", "a4"}; !slices.Equal(got, want) {
			t.Errorf("held pages %v, want %v", got, want)
		}
	})

	t.Run("FilterAndCounts", func(t *testing.T) {
		p, err := s.Held(ctx, ledger.HeldQuery{Tenant: "globex", Operation: "sms"})
		if err != nil {
			t.Fatal(err)
		}
		if got := heldKeys(p); !slices.Equal(got, []string{"a1", "a4"}) || p.Next != "" {
			t.Errorf("globex's held actions %v (next %q), want [a1 a4] on one page", got, p.Next)
		}
		if want := []ledger.HeldGroup{{Tenant: "globex", Operation: "sms", Held: 2}}; !slices.Equal(p.Groups, want) || p.Entries != 5 {
			t.Errorf("counts %+v of %d entries, want %+v of 5", p.Groups, p.Entries, want)
		}
		all, err := s.Held(ctx, ledger.HeldQuery{Examine: 3})
		if err != nil {
			t.Fatal(err)
		}
		held := 0
		for _, g := range all.Groups {
			held += g.Held
		}
		if !all.Capped || held != 3 {
			t.Errorf("counts over the oldest 3 entries: %+v capped %t, want 3 counted and capped", all.Groups, all.Capped)
		}
	})

	t.Run("StaleEntriesAreDroppedNeverShown", func(t *testing.T) {
		// a0 settled by a reconciler (not through the index), a2's record
		// gone: both entries are stale.
		rec, err := s.Get(ctx, order[0])
		if err != nil {
			t.Fatal(err)
		}
		done := ledger.Reconcile(ctx, s, func(context.Context, ledger.Record) (ledger.Resolution, error) {
			return ledger.Resolution{State: ledger.StateCompleted, Outcome: ledger.Outcome{Status: 200}}, nil
		}, []ledger.Record{rec}, "reconciler")
		if done[0].Err != nil || done[0].State != ledger.StateCompleted {
			t.Fatalf("reconcile: %+v", done[0])
		}
		if err := client.Del(ctx, ledger.RedisKeyName(s, order[2])).Err(); err != nil {
			t.Fatal(err)
		}
		p, err := s.Held(ctx, ledger.HeldQuery{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got := heldKeys(p); !slices.Equal(got, []string{"a1", "a3"}) {
			t.Errorf("first page %v after a0 was settled and a2 dropped, want [a1 a3]", got)
		}
		n, err := client.ZCard(ctx, ledger.HeldKeys(s)[0]).Result()
		if err != nil || n != 3 {
			t.Errorf("index entries after listing: %d (%v), want 3: the stale ones removed", n, err)
		}
	})

	t.Run("AnEntryMadeAgainSurvivesAStaleRemoval", func(t *testing.T) {
		k := ledger.Key{Tenant: "acme", Operation: "sms", Key: "again"}
		holdOnRedis(t, s, k)
		seen, err := ledger.HeldVersion(s, k)
		if err != nil || seen == "" {
			t.Fatalf("version %q (%v)", seen, err)
		}
		// After a lister read the entry, the action fails again with a
		// possible effect: a new version. The lister's removal, based on
		// what it read, must leave the new entry.
		again, err := s.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: "fp", Owner: "reconciler", Reconciler: true})
		if err != nil || again.Verdict != ledger.VerdictReconcile {
			t.Fatalf("takeover: %s %v", again.Verdict, err)
		}
		if err := s.Fail(ctx, k, again.Token, ledger.Failure{EffectPossible: true, Reason: "reconciler failed"}); err != nil {
			t.Fatal(err)
		}
		ledger.UnindexHeld(s, k, seen)
		if v, err := ledger.HeldVersion(s, k); err != nil || v == "" || v == seen {
			t.Errorf("entry version %q after a removal of version %q (%v): want the newer entry kept", v, seen, err)
		}
		ledger.UnindexHeld(s, k, mustVersion(t, s, k))
		if v, _ := ledger.HeldVersion(s, k); v != "" {
			t.Errorf("removal with the current version left version %q", v)
		}
	})

	t.Run("BadCursor", func(t *testing.T) {
		if _, err := s.Held(ctx, ledger.HeldQuery{After: "nope"}); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("a cursor Held never returned: %v, want ErrInvalid", err)
		}
	})
}

func mustVersion(t *testing.T, s *ledger.Redis, k ledger.Key) string {
	t.Helper()
	v, err := ledger.HeldVersion(s, k)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The success path (Reserve, MarkSending, Complete) costs what it cost
// before the held index, one round trip each, and writes nothing to it.
func TestRedisHeldIndexCostsTheSuccessPathNothing(t *testing.T) {
	client := redistest.Client(t)
	s := ledgertest.Redis(t, client, redistest.Prefix(t))
	ctx := t.Context()
	warm := ledger.Key{Tenant: "acme", Operation: "sms", Key: "warm"}
	res, err := s.Reserve(ctx, ledger.ReserveRequest{Key: warm, Fingerprint: "fp", MarksSending: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSending(ctx, warm, res.Token); err != nil { // loads the scripts
		t.Fatal(err)
	}
	if err := s.Complete(ctx, warm, res.Token, ledger.Outcome{Status: 200}); err != nil {
		t.Fatal(err)
	}
	var trips redistest.RoundTrips
	client.AddHook(&trips)
	k := ledger.Key{Tenant: "acme", Operation: "sms", Key: "ok"}
	res, err = s.Reserve(ctx, ledger.ReserveRequest{Key: k, Fingerprint: "fp", MarksSending: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSending(ctx, k, res.Token); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, k, res.Token, ledger.Outcome{Status: 200}); err != nil {
		t.Fatal(err)
	}
	if n := trips.N.Load(); n != 3 {
		t.Errorf("Reserve, MarkSending and Complete took %d round trips, want 3", n)
	}
	if n, err := client.Exists(ctx, ledger.HeldKeys(s)...).Result(); err != nil || n != 0 {
		t.Errorf("the success path wrote %d held-index keys (%v), want none", n, err)
	}
}
