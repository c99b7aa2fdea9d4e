package budget

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// unreachable returns a client of a port where nothing listens: every round
// trip fails at once with a refused connection.
func unreachable(t *testing.T) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// While Redis cannot be reached every decision is a fallback and follows
// the mode: failing open, it is the local rule counted from this process's
// deposits; failing closed, it refuses.
func TestUnreachableFollowsFailMode(t *testing.T) {
	tests := []struct {
		mode         FailMode
		wantAllowed  int
		wantDeposits int64
	}{
		// 10% of 100 first attempts, plus the floor's one second of 10.
		{FailOpen, 20, 100},
		{FailClosed, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			b, err := NewRedis(unreachable(t), RedisConfig{OnUnavailable: tt.mode, DestinationKey: testDestinationKey})
			if err != nil {
				t.Fatal(err)
			}
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
					t.Fatalf("decision %+v without Redis; want Fallback", last)
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

// A nil client, or a nil pointer of a go-redis client type, is an error
// at construction, as in package limiter and package ledger, rather than a
// budget that silently never shares (or a panic at the first decision).
func TestNilClientIsAnError(t *testing.T) {
	for _, rdb := range []redis.UniversalClient{nil, (*redis.Client)(nil), (*redis.ClusterClient)(nil), (*redis.Ring)(nil)} {
		if b, err := NewRedis(rdb, RedisConfig{}); !errors.Is(err, ErrInvalidConfig) || b != nil {
			t.Errorf("NewRedis(%T(nil)) = %v, %v; want ErrInvalidConfig", rdb, b, err)
		}
	}
}

// The key-prefix rule is the limiter's and the ledger's: no braces.
func TestPrefixWithBracesIsAnError(t *testing.T) {
	if _, err := NewRedis(unreachable(t), RedisConfig{Prefix: "a{b}:", DestinationKey: testDestinationKey}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("NewRedis with Prefix a{b}: = %v; want ErrInvalidConfig", err)
	}
}

func TestFailModeString(t *testing.T) {
	for m, want := range map[FailMode]string{FailOpen: "fail-open", FailClosed: "fail-closed", 7: "FailMode(invalid)"} {
		if got := m.String(); got != want {
			t.Errorf("FailMode(%d).String() = %q; want %q", int(m), got, want)
		}
	}
}

// An unknown mode fails open rather than refusing every retry.
func TestUnknownFailModeFailsOpen(t *testing.T) {
	b, err := NewRedis(unreachable(t), RedisConfig{OnUnavailable: 7, DestinationKey: testDestinationKey})
	if err != nil {
		t.Fatal(err)
	}
	if b.policy != FailOpen || b.local == nil {
		t.Fatalf("mode %v, fallback %v; want fail-open with a fallback", b.policy, b.local != nil)
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
