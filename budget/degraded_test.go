package budget

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// Without a client every decision is degraded and follows the policy:
// failing open, it is the local rule counted from this process's deposits;
// failing closed, it refuses.
func TestNilClientFollowsPolicy(t *testing.T) {
	tests := []struct {
		policy       Policy
		wantAllowed  int
		wantDeposits int64
	}{
		// 10% of 100 first attempts, plus the floor's one second of 10.
		{FailOpen, 20, 100},
		{FailClosed, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.policy.String(), func(t *testing.T) {
			b := NewRedis(nil, RedisConfig{OnUnavailable: tt.policy})
			b.now = func() time.Time { return t0 }
			ctx := context.Background()
			for range 100 {
				b.Deposit(ctx, "api")
			}
			allowed := 0
			var last Decision
			for range 50 {
				last = b.Withdraw(ctx, "api")
				if !last.Fallback {
					t.Fatalf("decision %+v without a client; want Fallback", last)
				}
				if last.Allowed {
					allowed++
				}
			}
			if allowed != tt.wantAllowed || last.Deposits != tt.wantDeposits {
				t.Fatalf("%d allowed, last %+v; want %d allowed over %d deposits", allowed, last, tt.wantAllowed, tt.wantDeposits)
			}
		})
	}
}

// A nil pointer of a go-redis client type counts as no client, rather
// than panicking on the first decision.
func TestTypedNilClient(t *testing.T) {
	var c *redis.Client
	var cc *redis.ClusterClient
	for _, rdb := range []redis.UniversalClient{c, cc} {
		b := NewRedis(rdb, RedisConfig{OnUnavailable: FailClosed})
		b.Deposit(context.Background(), "api")
		if d := b.Withdraw(context.Background(), "api"); d.Allowed || !d.Fallback {
			t.Fatalf("%T(nil): %+v; want a degraded refusal", rdb, d)
		}
	}
}

func TestPolicyString(t *testing.T) {
	for p, want := range map[Policy]string{FailOpen: "fail-open", FailClosed: "fail-closed", 7: "Policy(invalid)"} {
		if got := p.String(); got != want {
			t.Errorf("Policy(%d).String() = %q; want %q", int(p), got, want)
		}
	}
}

// An unknown policy fails open rather than refusing every retry.
func TestUnknownPolicyFailsOpen(t *testing.T) {
	if b := NewRedis(nil, RedisConfig{OnUnavailable: 7}); b.policy != FailOpen || b.local == nil {
		t.Fatalf("policy %v, fallback %v; want fail-open with a fallback", b.policy, b.local != nil)
	}
}

// FuzzParseReply: whatever a server or a mismatched script replies,
// parseReply returns an error or a reply, and never panics.
func FuzzParseReply(f *testing.F) {
	f.Add(uint8(3), int64(1), int64(100), int64(11), "x")
	f.Add(uint8(0), int64(0), int64(0), int64(0), "")
	f.Add(uint8(7), int64(-1), int64(1<<62), int64(0), "OK")
	f.Fuzz(func(t *testing.T, shape uint8, a, b, c int64, s string) {
		var v any
		switch shape % 6 {
		case 0:
			v = s
		case 1:
			v = a
		case 2:
			v = []any{a, b}
		case 3:
			v = []any{a, b, c}
		case 4:
			v = []any{a, s, c}
		case 5:
			v = []any{a, b, c, s}
		}
		r, err := parseReply(v)
		if err == nil && (shape%6 != 3 || r.deposits != b || r.retries != c || r.allowed != (a == 1)) {
			t.Fatalf("parseReply(%#v) = %+v without error", v, r)
		}
	})
}

func TestParseReply(t *testing.T) {
	tests := []struct {
		in   any
		want reply
		ok   bool
	}{
		{[]any{int64(1), int64(100), int64(11)}, reply{true, 100, 11}, true},
		{[]any{int64(0), int64(0), int64(0)}, reply{}, true},
		{[]any{int64(1), int64(2)}, reply{}, false},
		{[]any{"1", int64(2), int64(3)}, reply{}, false},
		{"OK", reply{}, false},
		{nil, reply{}, false},
	}
	for _, tt := range tests {
		got, err := parseReply(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseReply(%#v) = %+v, %v; want %+v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
