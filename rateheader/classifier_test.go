package rateheader

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/limiter"
)

// answer builds the AttemptResult of a response with the given status and
// header fields, arriving at now.
func answer(status int, kv ...string) *retrybudget.AttemptResult {
	return &retrybudget.AttemptResult{
		Response: &http.Response{StatusCode: status, Header: header(kv...), Body: http.NoBody},
		Now:      now,
	}
}

func TestClassifier(t *testing.T) {
	in := func(d time.Duration) time.Time { return now.Add(d) }
	epoch := strconv.FormatInt(now.Add(10*time.Minute).Unix(), 10)
	tests := []struct {
		name    string
		c       Classifier
		a       *retrybudget.AttemptResult
		class   retrybudget.Class
		retryAt time.Time
		pause   time.Time
	}{
		{"success with quota left", Classifier{}, answer(200, "RateLimit", `"d";r=5;t=30`),
			retrybudget.ClassSuccess, time.Time{}, time.Time{}},
		{"success with quota spent pauses", Classifier{}, answer(200, "RateLimit", `"d";r=0;t=30`),
			retrybudget.ClassSuccess, time.Time{}, in(30 * time.Second)},
		{"latest reset of the spent quotas binds", Classifier{},
			answer(200, "RateLimit", `"a";r=0;t=30, "b";r=0;t=90, "c";r=1;t=300`),
			retrybudget.ClassSuccess, time.Time{}, in(90 * time.Second)},
		{"429 waits for the reset", Classifier{}, answer(429, "RateLimit", `"d";r=0;t=30`),
			retrybudget.ClassCapacity, in(30 * time.Second), in(30 * time.Second)},
		{"Retry-After takes precedence over the reset", Classifier{}, answer(429, "Retry-After", "5", "RateLimit", `"d";r=0;t=30`),
			retrybudget.ClassCapacity, in(5 * time.Second), time.Time{}},
		{"decimal Retry-After", Classifier{}, answer(429, "Retry-After", "2.5"),
			retrybudget.ClassCapacity, in(2500 * time.Millisecond), time.Time{}},
		{"Retry-After-Ms raises RetryAt", Classifier{}, answer(503, "Retry-After", "1", "Retry-After-Ms", "1500"),
			retrybudget.ClassCapacity, in(1500 * time.Millisecond), time.Time{}},
		{"Retry-After-Ms never lowers RetryAt", Classifier{}, answer(503, "Retry-After", "2", "Retry-After-Ms", "1500"),
			retrybudget.ClassCapacity, in(2 * time.Second), time.Time{}},
		{"X-RateLimit epoch", Classifier{Mode: ResetEpoch}, answer(200, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", epoch),
			retrybudget.ClassSuccess, time.Time{}, in(10 * time.Minute)},
		{"X-RateLimit epoch refused as a delta", Classifier{Mode: ResetDelta}, answer(200, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", epoch),
			retrybudget.ClassSuccess, time.Time{}, time.Time{}},
		{"extra families", Classifier{Families: []XRateLimit{{Suffix: "-Tokens", Mode: ResetDuration}}},
			answer(200, "X-RateLimit-Remaining-Tokens", "0", "X-RateLimit-Reset-Tokens", "1m"),
			retrybudget.ClassSuccess, time.Time{}, in(time.Minute)},
		{"business answer still pauses", Classifier{}, answer(404, "RateLimit", `"d";r=0;t=30`),
			retrybudget.ClassBusiness, time.Time{}, in(30 * time.Second)},
		{"reset in the past gives no pause", Classifier{Mode: ResetEpoch}, answer(200, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1000"),
			retrybudget.ClassSuccess, time.Time{}, time.Time{}},
		{"malformed field ignored", Classifier{}, answer(429, "RateLimit", `"d";r=0;t=30,`),
			retrybudget.ClassCapacity, time.Time{}, time.Time{}},
		{"Next's verdict is kept and raised", Classifier{Next: fixed{retrybudget.Classification{
			Class: retrybudget.ClassCapacity, Hint: retrybudget.HintRetry, PauseUntil: in(time.Hour)}}},
			answer(200, "RateLimit", `"d";r=0;t=30`),
			retrybudget.ClassCapacity, in(30 * time.Second), in(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cls := tt.c.Classify(tt.a)
			if cls.Class != tt.class || !cls.RetryAt.Equal(tt.retryAt) || !cls.PauseUntil.Equal(tt.pause) {
				t.Fatalf("Classify = class %v, RetryAt now+%v, PauseUntil now+%v; want %v, now+%v, now+%v",
					cls.Class, sub(cls.RetryAt), sub(cls.PauseUntil), tt.class, sub(tt.retryAt), sub(tt.pause))
			}
		})
	}
}

func TestClassifierPassesTransportErrorsThrough(t *testing.T) {
	a := &retrybudget.AttemptResult{Err: errors.New("connection reset"), Now: now}
	if cls := (Classifier{}).Classify(a); cls.Class != retrybudget.ClassMaybeSent || !cls.PauseUntil.IsZero() {
		t.Fatalf("Classify = %+v; want DefaultClassifier's maybe-sent, no pause", cls)
	}
}

// fixed is a Classifier that always answers c.
type fixed struct{ c retrybudget.Classification }

func (f fixed) Classify(*retrybudget.AttemptResult) retrybudget.Classification { return f.c }

func sub(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return t.Sub(now)
}

// recorder is a limiter.Limiter that allows everything and records the
// cooldowns it is asked for.
type recorder struct {
	mu        sync.Mutex // guards cooldowns
	cooldowns []time.Time
}

func (r *recorder) Allow(context.Context, limiter.Request) (limiter.Decision, error) {
	return limiter.Decision{Allowed: true}, nil
}

func (r *recorder) Cooldown(_ context.Context, _ string, until time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cooldowns = append(r.cooldowns, until)
	return nil
}

// TestSpentQuotaPausesTheBoundaryThroughTheTransport sends one request
// through a real Transport to a server whose quota is spent, and checks
// that the limiter is told to pause until the reset.
func TestSpentQuotaPausesTheBoundaryThroughTheTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Policy", `"default";q=100;w=60`)
		w.Header().Set("RateLimit", `"default";r=0;t=42`)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	lim := &recorder{}
	client := &http.Client{Transport: retrybudget.New(retrybudget.Config{
		Base: srv.Client().Transport, Classifier: Classifier{}, Limiter: lim,
	})}
	start := time.Now()
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.EqualFold(string(body), "ok") {
		t.Fatalf("status %d body %q; want the success returned untouched", resp.StatusCode, body)
	}
	lim.mu.Lock()
	defer lim.mu.Unlock()
	if len(lim.cooldowns) != 1 {
		t.Fatalf("cooldowns %v; want one", lim.cooldowns)
	}
	if d := lim.cooldowns[0].Sub(start); d < 41*time.Second || d > 43*time.Second {
		t.Fatalf("cooldown until start+%v; want about 42s", d)
	}
}
