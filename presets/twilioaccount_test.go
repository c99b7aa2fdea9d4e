package presets_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/presets"
)

// TestTwilioVerifyAttemptLimitIsNotRetried answers a Verify send with the
// 429 Twilio documents for a verification past its attempts (60202, 60203):
// five per ten minutes, which no backoff of seconds lifts, so it is sent
// once. A concurrency 429 (20429) is still retried.
func TestTwilioVerifyAttemptLimitIsNotRetried(t *testing.T) {
	for _, c := range []struct {
		code     string
		arrivals int
	}{{"60202", 1}, {"60203", 1}, {"20429", 3}} {
		t.Run(c.code, func(t *testing.T) {
			f := newFake(t, reply{status: 429, header: []string{"Content-Type", "application/json"},
				body: `{"code":` + c.code + `,"message":"Max send attempts reached","more_info":"https://www.twilio.com/docs/errors/` + c.code + `","status":429}`})
			cl := atFake(t, f, presets.TwilioRoutes(), nil)
			out := do(context.Background(), t, cl, f, "POST", "/v2/Services/VA1/Verifications")
			t.Logf("429 code %s: %d arrivals", c.code, f.arrivals())
			if f.arrivals() != c.arrivals {
				t.Fatalf("%d arrivals; want %d", f.arrivals(), c.arrivals)
			}
			if c.arrivals == 1 && (out.Class != retrybudget.ClassBusiness || !errors.Is(out.Reason, retrybudget.ErrRejected)) {
				t.Fatalf("class %v, reason %v; want a business answer, rejected", out.Class, out.Reason)
			}
		})
	}
}

// TestTwilioBoundaryIsTheAccount sends requests of one account through an
// Account SID and an API key, and of another account, and checks the
// boundary each counts against: Twilio limits concurrency per account.
func TestTwilioBoundaryIsTheAccount(t *testing.T) {
	f := newFake(t, reply{status: 201})
	lim := &recorder{}
	cl := atFake(t, f, presets.TwilioRoutes(), func(cfg *retrybudget.Config) { cfg.Limiter = lim })
	send := func(path, user, pass string) {
		req, _ := http.NewRequest("POST", f.srv.URL+path, nil)
		req.SetBasicAuth(user, pass)
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	send("/2010-04-01/Accounts/AC111/Messages.json", "AC111", "token-1")
	send("/2010-04-01/Accounts/AC111/Calls.json", "SK900", "key-secret")
	send("/v2/Services/VA1/Verifications", "AC111", "token-1")
	send("/2010-04-01/Accounts/AC222/Messages.json", "AC222", "token-2")
	send("/v2/Services/VA2/Verifications", "SK901", "other-secret")
	got, _ := lim.recorded()
	want := []string{"twilio:AC111", "twilio:AC111", "twilio:AC111", "twilio:AC222"}
	for i, w := range want {
		if got[i] != w {
			t.Fatalf("boundaries %q; want %q first", got, want)
		}
	}
	if b := got[4]; b == "twilio:AC111" || b == "twilio:AC222" || b == "" {
		t.Fatalf("an API key on a product host counted against %q; want its own credential boundary", b)
	}
}

// TestTwilioKeyedAPIsRepeatUnderTheirKey sends a POST that gets a 500 to
// the APIs that take Idempotency-Key (Voice v3 Transcriptions,
// Conversations v2 configurations): it is repeated under one generated
// key. A message send, which takes none, is sent once without a key.
func TestTwilioKeyedAPIsRepeatUnderTheirKey(t *testing.T) {
	for _, c := range []struct {
		path     string
		arrivals int
		keyed    bool
	}{
		{"/v3/Transcriptions", 2, true},
		{"/v2/ControlPlane/Configurations", 2, true},
		{"/2010-04-01/Accounts/AC111/Messages.json", 1, false},
	} {
		t.Run(c.path, func(t *testing.T) {
			f := newFake(t, reply{status: 500}, reply{status: 202, body: `{"id":"op-1"}`})
			cl := atFake(t, f, presets.TwilioRoutes(), nil)
			out := do(context.Background(), t, cl, f, "POST", c.path)
			reqs := f.requests()
			t.Logf("%s: %d arrivals", c.path, len(reqs))
			if len(reqs) != c.arrivals {
				t.Fatalf("%d arrivals (reason %v); want %d", len(reqs), out.Reason, c.arrivals)
			}
			key := reqs[0].header.Get("Idempotency-Key")
			if c.keyed && (key == "" || reqs[1].header.Get("Idempotency-Key") != key || out.Reason != nil) {
				t.Fatalf("keys %q, %q, reason %v; want one generated key on both and a success",
					key, reqs[1].header.Get("Idempotency-Key"), out.Reason)
			}
			if !c.keyed && (key != "" || !errors.Is(out.Reason, retrybudget.ErrUncertain)) {
				t.Fatalf("key %q, reason %v; want none sent and ErrUncertain", key, out.Reason)
			}
		})
	}
}
