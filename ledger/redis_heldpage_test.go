package ledger

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/internal/redistest"
)

// Held entries of one score (Fails in the same millisecond of the server's
// clock) page through in full however many there are: the entries at the
// cursor's score up to its member, read again and skipped, do not use up
// the page's Examine, so the cursor always moves.
func TestRedisHeldPagesThroughEntriesOfOneScore(t *testing.T) {
	ctx := t.Context()
	client := redistest.Client(t)
	s := mustRedis(t, client, RedisConfig{Prefix: redistest.Prefix(t)})
	const n = 12
	for i := range n {
		k := Key{Tenant: "acme", Operation: "sms", Key: fmt.Sprintf("k%02d", i)}
		res, err := s.Reserve(ctx, ReserveRequest{Key: k, Fingerprint: fpA, Owner: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Fail(ctx, k, res.Token, Failure{EffectPossible: true, Reason: "timeout"}); err != nil {
			t.Fatal(err)
		}
	}
	// One score for all, as a burst within one millisecond gets.
	entries := s.heldKeys()[0]
	ids, err := client.ZRange(ctx, entries, 0, -1).Result()
	if err != nil || len(ids) != n {
		t.Fatalf("held index: %d entries, %v", len(ids), err)
	}
	for _, id := range ids {
		if err := client.ZAdd(ctx, entries, redis.Z{Score: 1700000000000, Member: id}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	q := HeldQuery{Limit: 2, Examine: 4}
	for page := 1; ; page++ {
		p, err := s.Held(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Records {
			seen[r.Key.Key] = true
		}
		if p.Next == "" {
			break
		}
		if p.Next == q.After || page > n {
			t.Fatalf("page %d: the cursor %q does not move; %d of %d held actions listed", page, p.Next, len(seen), n)
		}
		q.After = p.Next
	}
	if len(seen) != n {
		t.Fatalf("%d of %d held actions listed", len(seen), n)
	}
}
