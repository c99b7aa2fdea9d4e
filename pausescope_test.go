package retrybudget

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/limiter"
)

// scopePauser classifies a 429 as capacity with a pause of the boundary
// (PauseUntil) and of its scope (PauseScopeUntil), each that long after
// the attempt when not zero; any other answer as DefaultClassifier does.
type scopePauser struct{ boundary, scope time.Duration }

func (s scopePauser) Classify(a *AttemptResult) Classification {
	if a.Response == nil || a.Response.StatusCode != 429 {
		return DefaultClassifier{}.Classify(a)
	}
	c := Classification{Class: ClassCapacity, RetryAt: a.Now.Add(time.Second)}
	if s.boundary > 0 {
		c.PauseUntil = a.Now.Add(s.boundary)
	}
	if s.scope > 0 {
		c.PauseScopeUntil = a.Now.Add(s.scope)
	}
	return c
}

// TestPauseScopeUntilPausesTheBoundaryScope: a classification's
// PauseScopeUntil pauses the scope of the request's boundary
// (limiter.Scope), and the boundary itself only when its own pause ends
// later, so a pause the scope covers costs one Cooldown.
func TestPauseScopeUntilPausesTheBoundaryScope(t *testing.T) {
	tests := []struct {
		name       string
		boundary   string
		classifier scopePauser
		want       []string // boundaries paused, in order
		until      []time.Duration
	}{
		{"the scope covers the boundary", limiter.Within("acct", "core"), scopePauser{scope: 5 * time.Second}, []string{"acct"}, []time.Duration{5 * time.Second}},
		{"the boundary's own pause ends later", limiter.Within("acct", "core"), scopePauser{boundary: 10 * time.Second, scope: 5 * time.Second},
			[]string{"acct", limiter.Within("acct", "core")}, []time.Duration{5 * time.Second, 10 * time.Second}},
		{"a boundary within no scope is its own scope", "acct", scopePauser{scope: 5 * time.Second}, []string{"acct"}, []time.Duration{5 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, status(429), status(200))
			lim := &scriptedLimiter{decisions: []limiter.Decision{allow}}
			tr, fc := newFakeTransport(Config{Limiter: lim, Boundary: limiter.Fixed(tt.boundary), Classifier: tt.classifier})
			start := fc.Now()
			resp, err := send(context.Background(), t, tr, "GET", p.URL, "")
			if err != nil {
				t.Fatal(err)
			}
			finalOutcome(t, resp)
			if !slices.Equal(lim.boundary, tt.want) {
				t.Fatalf("cooldowns on %q; want %q", lim.boundary, tt.want)
			}
			for i, until := range lim.cooldowns {
				if d := until.Sub(start); d < tt.until[i] || d > tt.until[i]+time.Second {
					t.Fatalf("cooldown %d until start+%v; want about %v", i, d, tt.until[i])
				}
			}
		})
	}
}
