package retrybudget

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// Two actions may send identical requests; an SDK's numbered re-send of one
// is answered with that action's own give-up, never with the other's.
func TestSDKResendIsAnsweredWithItsOwnActionsGiveUp(t *testing.T) {
	// X's send is lost (it may have been applied); Y's is refused with a
	// long Retry-After.
	p := newProvider(t, lost, status(429, "Retry-After", "120"))
	tr, _ := newFakeTransport(Config{OmitKey: true})
	count := func(n string) http.Header { return http.Header{"X-Stainless-Retry-Count": {n}} }
	x := WithAction(context.Background(), Action{Operation: "complete", Key: "x"})
	y := WithAction(context.Background(), Action{Operation: "complete", Key: "y"})
	if _, err := post(x, t, tr, p.URL, count("0")); !errors.Is(err, ErrUncertain) {
		t.Fatalf("X's first send: %v, want ErrUncertain", err)
	}
	resp, err := post(y, t, tr, p.URL, count("0"))
	if err != nil {
		t.Fatal(err)
	}
	if o := finalOutcome(t, resp); !errors.Is(o.Reason, ErrWaitTooLong) {
		t.Fatalf("Y's first send: %+v, want ErrWaitTooLong", o)
	}
	_, err = post(x, t, tr, p.URL, count("1"))
	var e *Error
	if !errors.As(err, &e) || !e.Repeated || !errors.Is(err, ErrUncertain) {
		t.Fatalf("X's re-send: %v, want X's own give-up: ErrUncertain, repeated", err)
	}
	if n := len(p.requests()); n != 2 {
		t.Fatalf("%d arrivals, want X's and Y's first sends only", n)
	}
}
