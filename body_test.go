package retrybudget

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
)

func TestBodies(t *testing.T) {
	t.Run("GetBody is used for retries", func(t *testing.T) {
		p := newProvider(t, status(503), status(200))
		tr, _ := newFakeTransport(Config{MaxBodyBuffer: -1})
		req, _ := http.NewRequest("PUT", p.URL, strings.NewReader("abc")) // NewRequest sets GetBody
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		finalOutcome(t, resp)
		if r := p.requests(); len(r) != 2 || r[1].body != "abc" {
			t.Fatalf("requests %v; want the body replayed", r)
		}
	})
	t.Run("oversized body without GetBody is sent once", func(t *testing.T) {
		p := newProvider(t, status(503), status(200))
		tr, _ := newFakeTransport(Config{MaxBodyBuffer: 4})
		body := strings.Repeat("z", 100)
		req, _ := http.NewRequest("PUT", p.URL, io.NopCloser(strings.NewReader(body)))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		o := finalOutcome(t, resp)
		if !errors.Is(o.Reason, ErrBodyNotReplayable) || resp.StatusCode != 503 {
			t.Fatalf("reason %v status %d; want ErrBodyNotReplayable with the 503", o.Reason, resp.StatusCode)
		}
		if r := p.requests(); len(r) != 1 || r[0].body != body {
			t.Fatalf("provider saw %d requests; want 1 with the whole body", len(r))
		}
	})
	t.Run("failing GetBody stops the call", func(t *testing.T) {
		p := newProvider(t, status(503), status(200))
		tr, _ := newFakeTransport(Config{})
		req, _ := http.NewRequest("PUT", p.URL, strings.NewReader("abc"))
		boom := errors.New("boom")
		req.GetBody = func() (io.ReadCloser, error) { return nil, boom }
		_, err := tr.RoundTrip(req)
		if !errors.Is(err, ErrBodyNotReplayable) || !errors.Is(err, boom) {
			t.Fatalf("error %v; want ErrBodyNotReplayable wrapping the GetBody error", err)
		}
	})
}

// A numbered re-send under an Action needs the body twice before it is
// sent, for the re-send fingerprint and for the ledger's: GetBody is read
// once for both.
func TestBodyIsReadOnceForTheResendAndLedgerFingerprints(t *testing.T) {
	p := newProvider(t, status(200))
	tr, _ := newFakeTransport(Config{Ledger: LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})}})
	ctx := WithAction(context.Background(), Action{Operation: "charge", Key: "order-1"})
	req, _ := http.NewRequestWithContext(ctx, "POST", p.URL, strings.NewReader("amount=100"))
	req.Header.Set("X-Stainless-Retry-Count", "0")
	getBody, reads := req.GetBody, 0
	req.GetBody = func() (io.ReadCloser, error) { reads++; return getBody() }
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	finalOutcome(t, resp)
	if reads != 1 {
		t.Fatalf("GetBody called %d times; want once, for both fingerprints", reads)
	}
	if r := p.requests(); len(r) != 1 || r[0].body != "amount=100" {
		t.Fatalf("provider got %v; want the body once", r)
	}
}
