package retrybudget

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestObserverSeesEveryEvent(t *testing.T) {
	p := newProvider(t, status(429, "Retry-After", "1"), status(503))
	var attempts []AttemptEvent
	var retries []RetryEvent
	var giveUps []GiveUpEvent
	tr, _ := newFakeTransport(Config{MaxAttempts: 3, Observer: Observer{
		Attempt: func(e AttemptEvent) { attempts = append(attempts, e) },
		Retry:   func(e RetryEvent) { retries = append(retries, e) },
		GiveUp:  func(e GiveUpEvent) { giveUps = append(giveUps, e) },
	}})
	resp, err := send(context.Background(), t, tr, "POST", p.URL, "x")
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if len(attempts) != 3 || len(retries) != 2 || len(giveUps) != 1 {
		t.Fatalf("%d attempts, %d retries, %d give-ups; want 3, 2, 1", len(attempts), len(retries), len(giveUps))
	}
	if attempts[0].StatusCode != 429 || attempts[0].Class != ClassCapacity || attempts[2].Attempt != 3 {
		t.Fatalf("attempt events %+v", attempts)
	}
	if retries[0].RetryAfter != time.Second || retries[0].Delay < time.Second || retries[1].Attempt != 3 {
		t.Fatalf("retry events %+v", retries)
	}
	if !errors.Is(giveUps[0].Outcome.Reason, ErrAttemptsExhausted) || giveUps[0].Outcome.Key == "" {
		t.Fatalf("give-up event %+v", giveUps[0])
	}
}
