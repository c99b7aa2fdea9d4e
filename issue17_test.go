package retrybudget

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
)

// Regression tests for issue 17, each named after the bug it pins.

// errorReader fails every read with err.
type errorReader struct{ err error }

func (r errorReader) Read([]byte) (int, error) { return 0, r.err }

func TestRefusalsBeforeSendingAreErrors(t *testing.T) {
	// Regression: ErrInvalidAction and the request-body read error came
	// back bare, though RoundTrip promises an *Error when there is no
	// response.
	readErr := errors.New("disk on fire")
	for _, tc := range []struct {
		name   string
		req    func() *http.Request
		reason error
		cause  error
	}{
		{"invalid action", func() *http.Request {
			ctx := WithAction(context.Background(), Action{Tenant: "t", Operation: "op"})
			req, _ := http.NewRequestWithContext(ctx, "POST", "http://127.0.0.1:1/", nil)
			return req
		}, ErrInvalidAction, nil},
		{"body read error", func() *http.Request {
			req, _ := http.NewRequest("POST", "http://127.0.0.1:1/", io.NopCloser(errorReader{readErr}))
			return req
		}, ErrBodyUnreadable, readErr},
		{"nil URL", func() *http.Request {
			return &http.Request{Method: "GET", Header: http.Header{}}
		}, errNilURL, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, _ := newFakeTransport(Config{})
			_, err := tr.RoundTrip(tc.req())
			e, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("error %T %v; want an *Error", err, err)
			}
			if !errors.Is(err, tc.reason) || e.Reason != tc.reason {
				t.Fatalf("error %v, Reason %v; want %v", err, e.Reason, tc.reason)
			}
			if tc.cause != nil && !errors.Is(err, tc.cause) {
				t.Fatalf("error %v does not match its cause %v", err, tc.cause)
			}
			if e.Attempts != 0 || e.Class != ClassNotSent || e.MaybeApplied {
				t.Fatalf("outcome %+v; want nothing sent", e.Outcome)
			}
		})
	}
}
