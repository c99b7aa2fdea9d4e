package presets_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

const slackPost = "https://slack.com/api/chat.postMessage"

func TestSlack429RetryAfter(t *testing.T) {
	f := newFake(t, reply{status: 429, header: []string{"Retry-After", "30"}})
	lim := &recorder{}
	c := client(t, f, presets.Slack(), lim, nil)
	start := time.Now()
	_, _, out := call(t.Context(), t, c, "POST", slackPost, "Authorization", "Bearer xoxb-test")
	if out.Attempts != 1 || out.Class != retrybudget.ClassCapacity || !errors.Is(out.Reason, retrybudget.ErrWaitTooLong) {
		t.Fatalf("attempts %d, class %v, reason %v; want one capacity attempt, ErrWaitTooLong", out.Attempts, out.Class, out.Reason)
	}
	if !near(out.RetryAt, start.Add(30*time.Second), time.Second) {
		t.Fatalf("RetryAt start+%v; want 30s", out.RetryAt.Sub(start))
	}
	boundaries, cools := lim.recorded()
	if len(cools) != 1 || !cools[0].until.Equal(out.RetryAt) || !strings.HasSuffix(cools[0].boundary, "|chat.postMessage") {
		t.Fatalf("cooldowns %+v (boundaries %v); want one until RetryAt on the method's boundary", cools, boundaries)
	}
}

func TestSlack429IsRetriedForAnUnkeyedPost(t *testing.T) {
	f := newFake(t, reply{status: 429, header: []string{"Retry-After", "0"}}, reply{status: 200, body: `{"ok":true}`})
	c := client(t, f, presets.Slack(), nil, nil)
	resp, body, out := call(t.Context(), t, c, "POST", slackPost)
	if resp.StatusCode != 200 || out.Attempts != 2 || body != `{"ok":true}` {
		t.Fatalf("status %d after %d attempts; want 200 after 2", resp.StatusCode, out.Attempts)
	}
}

func TestSlackServerErrorOnAPostIsNotRepeated(t *testing.T) {
	f := newFake(t, reply{status: 500})
	c := client(t, f, presets.Slack(), nil, nil)
	_, _, out := call(t.Context(), t, c, "POST", slackPost)
	if out.Attempts != 1 || !errors.Is(out.Reason, retrybudget.ErrUncertain) {
		t.Fatalf("attempts %d, reason %v; want one attempt and ErrUncertain: the message may have been posted", out.Attempts, out.Reason)
	}
}

func TestSlackMethodsHaveTheirOwnBoundary(t *testing.T) {
	f := newFake(t, reply{status: 200})
	lim := &recorder{}
	c := client(t, f, presets.Slack(), lim, nil)
	call(t.Context(), t, c, "POST", slackPost, "Authorization", "Bearer xoxb-test")
	call(t.Context(), t, c, "GET", "https://slack.com/api/users.list", "Authorization", "Bearer xoxb-test")
	boundaries, _ := lim.recorded()
	if len(boundaries) != 2 || boundaries[0] == boundaries[1] || !strings.HasSuffix(boundaries[1], "|users.list") {
		t.Fatalf("boundaries %v; want one per method", boundaries)
	}
}
