package plan_test

import (
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/plan"
)

// TestZeroPolicyIsTheDefaultConfig pins the Policy defaults to the root
// package's, so a changed default there cannot leave the planner behind.
func TestZeroPolicyIsTheDefaultConfig(t *testing.T) {
	got := plan.Policy{}.WithDefaults()
	want := plan.Policy{
		MaxAttempts: retrybudget.DefaultMaxAttempts,
		BaseDelay:   retrybudget.DefaultBaseDelay,
		MaxDelay:    retrybudget.DefaultMaxDelay,
		Jitter:      retrybudget.DefaultJitter,
		MaxWait:     retrybudget.DefaultMaxWait,
		Budget: budget.Config{
			Percent:          budget.DefaultPercent,
			MinRetriesPerSec: budget.DefaultMinRetriesPerSec,
			Window:           budget.DefaultWindow,
		},
		AttemptDuration:     plan.DefaultAttemptDuration,
		FirstAttemptsPerSec: plan.DefaultFirstAttemptsPerSec,
	}
	if got != want {
		t.Errorf("Policy{}.WithDefaults() = %+v, want %+v", got, want)
	}
	if got != plan.FromConfig(retrybudget.Config{}).WithDefaults() {
		t.Errorf("FromConfig(Config{}) differs from Policy{}")
	}
}

func TestWithDefaultsClampsAsTheConfigDoes(t *testing.T) {
	tests := []struct {
		name string
		in   plan.Policy
		want func(p plan.Policy) bool
	}{
		{"negative MaxAttempts means 1", plan.Policy{MaxAttempts: -3}, func(p plan.Policy) bool { return p.MaxAttempts == 1 }},
		{"negative Jitter means none", plan.Policy{Jitter: -1}, func(p plan.Policy) bool { return p.Jitter == 0 }},
		{"Jitter above 1 is 1", plan.Policy{Jitter: 3}, func(p plan.Policy) bool { return p.Jitter == 1 }},
		{"negative delays take the defaults", plan.Policy{BaseDelay: -1, MaxDelay: -1, MaxWait: -1},
			func(p plan.Policy) bool {
				return p.BaseDelay == retrybudget.DefaultBaseDelay && p.MaxDelay == retrybudget.DefaultMaxDelay &&
					p.MaxWait == retrybudget.DefaultMaxWait
			}},
		{"negative Deadline means none", plan.Policy{Deadline: -time.Second}, func(p plan.Policy) bool { return p.Deadline == 0 }},
		{"negative Percent means the floor alone", plan.Policy{Budget: budget.Config{Percent: -1}},
			func(p plan.Policy) bool { return p.Budget.Percent == 0 }},
		{"Percent above 1 is 1", plan.Policy{Budget: budget.Config{Percent: 5}},
			func(p plan.Policy) bool { return p.Budget.Percent == 1 }},
		{"negative floor means none", plan.Policy{Budget: budget.Config{MinRetriesPerSec: -1}},
			func(p plan.Policy) bool { return p.Budget.MinRetriesPerSec == 0 }},
		{"negative AttemptDuration means instant", plan.Policy{AttemptDuration: -1}, func(p plan.Policy) bool { return p.AttemptDuration == 0 }},
		{"set values stay", plan.Policy{MaxAttempts: 7, Jitter: 0.25, Deadline: time.Second, RetryAfter: 2 * time.Second},
			func(p plan.Policy) bool {
				return p.MaxAttempts == 7 && p.Jitter == 0.25 && p.Deadline == time.Second && p.RetryAfter == 2*time.Second
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.WithDefaults(); !tc.want(got) {
				t.Errorf("WithDefaults() = %+v", got)
			}
		})
	}
}

func TestFromConfig(t *testing.T) {
	cfg := retrybudget.Config{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: 10 * time.Second, Jitter: 0.2,
		MaxWait: 5 * time.Second, Deadline: 20 * time.Second, AttemptTimeout: 2 * time.Second}
	want := plan.Policy{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: 10 * time.Second, Jitter: 0.2,
		MaxWait: 5 * time.Second, Deadline: 20 * time.Second, AttemptDuration: 2 * time.Second}
	if got := plan.FromConfig(cfg); got != want {
		t.Errorf("FromConfig = %+v, want %+v", got, want)
	}
	cfg.Budget = budget.Unlimited{}
	if !plan.FromConfig(cfg).NoBudget {
		t.Error("budget.Unlimited did not set NoBudget")
	}
	cfg.Budget = budget.NewLocal(budget.Config{Percent: 0.5})
	if p := plan.FromConfig(cfg); p.NoBudget || p.Budget != (budget.Config{}) {
		t.Errorf("a budget.Local gave %+v, want the default rule", p)
	}
}
