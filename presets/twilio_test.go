package presets_test

import (
	"errors"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

const twilioMessages = "https://api.twilio.com/2010-04-01/Accounts/AC123/Messages.json"

func TestTwilio429IsSafeToRetry(t *testing.T) {
	f := newFake(t,
		reply{status: 429, header: []string{"Content-Type", "application/json"}, body: `{"code":20429,"status":429}`},
		reply{status: 201, body: `{"sid":"SM1"}`})
	c := client(t, f, presets.Twilio(), nil, nil)
	resp, body, out := call(t.Context(), t, c, "POST", twilioMessages)
	if resp.StatusCode != 201 || out.Attempts != 2 || out.Reason != nil || body != `{"sid":"SM1"}` {
		t.Fatalf("status %d, attempts %d, reason %v; want 201 after 2: a 429 was not processed", resp.StatusCode, out.Attempts, out.Reason)
	}
	if out.MaybeApplied != true {
		t.Fatal("MaybeApplied false after a success")
	}
}

func TestTwilioServerErrorOnAPostIsNotRepeated(t *testing.T) {
	for _, status := range []int{500, 502} {
		f := newFake(t, reply{status: status}, reply{status: 201})
		c := client(t, f, presets.Twilio(), nil, nil)
		_, _, out := call(t.Context(), t, c, "POST", twilioMessages)
		if out.Attempts != 1 || !errors.Is(out.Reason, retrybudget.ErrUncertain) || !out.MaybeApplied {
			t.Fatalf("%d: attempts %d, reason %v, maybe applied %v; want one attempt, ErrUncertain: the SMS may exist",
				status, out.Attempts, out.Reason, out.MaybeApplied)
		}
	}
}

func TestTwilioProductHostsMatch(t *testing.T) {
	f := newFake(t, reply{status: 429}, reply{status: 201})
	c := client(t, f, presets.Twilio(), nil, nil)
	_, _, out := call(t.Context(), t, c, "POST", "https://verify.twilio.com/v2/Services/VA1/Verifications")
	if out.Attempts != 2 {
		t.Fatalf("attempts %d; want the Twilio policy on verify.twilio.com", out.Attempts)
	}
}
