package budget

import (
	"context"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
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
			var last retrybudget.BudgetDecision
			for range 50 {
				last = b.Withdraw(ctx, "api")
				if !last.Degraded {
					t.Fatalf("decision %+v without a client; want Degraded", last)
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

// The rule's defaults are LocalBudget's, field by field.
func TestRuleDefaults(t *testing.T) {
	tests := []struct {
		in, want retrybudget.BudgetConfig
	}{
		{retrybudget.BudgetConfig{}, retrybudget.BudgetConfig{Percent: 0.1, MinRetriesPerSec: 10, Window: 10 * time.Second}},
		{retrybudget.BudgetConfig{Percent: -1, MinRetriesPerSec: -1, Window: -1}, retrybudget.BudgetConfig{Percent: 0, MinRetriesPerSec: 0, Window: 10 * time.Second}},
		{retrybudget.BudgetConfig{Percent: 2, MinRetriesPerSec: 3, Window: time.Second}, retrybudget.BudgetConfig{Percent: 1, MinRetriesPerSec: 3, Window: time.Second}},
	}
	for _, tt := range tests {
		if got := rule(tt.in); got != tt.want {
			t.Errorf("rule(%+v) = %+v; want %+v", tt.in, got, tt.want)
		}
	}
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
