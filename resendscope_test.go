package retrybudget

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// answer answers code with body.
func answer(code int, body string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// resendCount is the header openai-go numbers its sends of one call with.
func resendCount(n, auth string) http.Header {
	return http.Header{"X-Stainless-Retry-Count": {n}, "Authorization": {auth}}
}

// A give-up answers only the SDK re-sends of its own call: one to another
// host, or under another credential, is a different caller's, though the
// method, path and body are the same. Neither may another caller's give-up
// replace the victim's (the victim's re-send would be answered with the
// other's response, and not sent), nor may the victim's answer another
// caller's re-send (its response would leak to that caller).
func TestGiveUpsAreScopedByHostAndCredential(t *testing.T) {
	const phish = `{"error":"invalid key, sign in at https://phish.example"}`
	const secret = `{"error":"card declined","card":"4242"}`
	for _, tc := range []struct {
		name string
		// same sends the other caller to the victim's host.
		same      bool
		otherAuth string
	}{
		{"another host", false, "Bearer victim"},
		{"another credential", true, "Bearer other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("another caller's give-up never answers the victim", func(t *testing.T) {
				victim := newProvider(t, lost, answer(401, phish))
				other := victim
				if !tc.same {
					other = newProvider(t, answer(401, phish))
				}
				tr, _ := newFakeTransport(Config{})
				ctx := context.Background()
				if _, err := post(ctx, t, tr, victim.URL+"/v1/charges", resendCount("0", "Bearer victim")); !errors.Is(err, ErrUncertain) {
					t.Fatalf("victim's first send: %v, want ErrUncertain", err)
				}
				resp, err := post(ctx, t, tr, other.URL+"/v1/charges", resendCount("0", tc.otherAuth))
				if err != nil {
					t.Fatalf("other caller's send: %v", err)
				}
				if o := finalOutcome(t, resp); resp.StatusCode != 401 {
					t.Fatalf("other caller's send: %d %+v, want its 401", resp.StatusCode, o)
				}
				resp, err = post(ctx, t, tr, victim.URL+"/v1/charges", resendCount("1", "Bearer victim"))
				if resp != nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					t.Fatalf("victim's re-send answered %d %q, want its own give-up's ErrUncertain", resp.StatusCode, b)
				}
				var e *Error
				if !errors.As(err, &e) || !e.Repeated || !errors.Is(err, ErrUncertain) {
					t.Fatalf("victim's re-send: %v, want its own give-up's ErrUncertain, repeated", err)
				}
				arrivals := len(victim.requests())
				if tc.same {
					arrivals-- // the other caller's send
				}
				if arrivals != 1 {
					t.Fatalf("%d of the victim's sends arrived, want 1", arrivals)
				}
			})
			t.Run("the victim's give-up never answers another caller", func(t *testing.T) {
				victim := newProvider(t, answer(400, secret), answer(200, "other's own answer"))
				other := victim
				if !tc.same {
					other = newProvider(t, answer(200, "other's own answer"))
				}
				tr, _ := newFakeTransport(Config{})
				ctx := context.Background()
				resp, err := post(ctx, t, tr, victim.URL+"/v1/charges", resendCount("0", "Bearer victim"))
				if err != nil {
					t.Fatalf("victim's send: %v", err)
				}
				finalOutcome(t, resp)
				resp, err = post(ctx, t, tr, other.URL+"/v1/charges", resendCount("1", tc.otherAuth))
				if err != nil {
					t.Fatalf("other caller's re-send: %v", err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if o, _ := OutcomeOf(resp); o.Repeated || strings.Contains(string(b), "4242") {
					t.Fatalf("other caller's re-send answered %d %q (repeated %v), want it sent", resp.StatusCode, b, o.Repeated)
				}
				arrivals := len(other.requests())
				if tc.same {
					arrivals-- // the victim's send
				}
				if arrivals != 1 {
					t.Fatalf("%d of the other caller's sends arrived, want 1", arrivals)
				}
			})
		})
	}
}
