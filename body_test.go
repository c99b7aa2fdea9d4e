package retrybudget

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
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
