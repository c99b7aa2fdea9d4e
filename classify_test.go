package retrybudget

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestClassifyStatus(t *testing.T) {
	want := map[Class][]int{
		ClassSuccess:  {100, 200, 201, 204, 301, 304},
		ClassCapacity: {408, 425, 429, 503},
		ClassServer:   {500, 502, 504, 507, 520, 599},
		ClassBusiness: {400, 401, 403, 404, 409, 410, 412, 422, 501, 505, 511},
	}
	for class, codes := range want {
		for _, code := range codes {
			if got := classifyStatus(code); got != class {
				t.Errorf("classifyStatus(%d) = %v; want %v", code, got, class)
			}
		}
	}
}

func TestClassifyErrors(t *testing.T) {
	tests := []struct {
		name string
		res  AttemptResult
		want Class
	}{
		{"dns", AttemptResult{Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}, ClassNotSent},
		{"dial", AttemptResult{Err: fmt.Errorf("wrapped: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("refused")})}, ClassNotSent},
		{"tls record", AttemptResult{Err: tls.RecordHeaderError{Msg: "bad"}}, ClassNotSent},
		{"read after write", AttemptResult{Err: &net.OpError{Op: "read", Net: "tcp", Err: io.ErrUnexpectedEOF}}, ClassMaybeSent},
		{"traced, no connection", AttemptResult{Err: context.DeadlineExceeded, Traced: true}, ClassNotSent},
		{"traced, connected", AttemptResult{Err: io.EOF, Traced: true, Connected: true}, ClassMaybeSent},
		{"traced, written", AttemptResult{Err: io.EOF, Traced: true, Connected: true, Written: true}, ClassMaybeSent},
		{"untraced timeout", AttemptResult{Err: context.DeadlineExceeded}, ClassMaybeSent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (DefaultClassifier{}).Classify(&tt.res).Class; got != tt.want {
				t.Fatalf("class %v; want %v", got, tt.want)
			}
		})
	}
}

func TestTLSHandshakeFailureIsNotSent(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	srv.StartTLS()
	defer srv.Close()
	base := &http.Transport{} // does not trust the test certificate
	defer base.CloseIdleConnections()
	tr, _ := newFakeTransport(Config{Base: base, MaxAttempts: 2})
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader("x"))
	_, err := tr.RoundTrip(req)
	var e *Error
	if !errors.As(err, &e) || e.Class != ClassNotSent || e.MaybeApplied || e.Attempts != 2 {
		t.Fatalf("error %v; want not-sent after 2 attempts, nothing applied", err)
	}
}

func TestClassifyReadsRetryAfterOnlyFromFailures(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := http.Header{"Retry-After": {"30"}}
	ok := (DefaultClassifier{}).Classify(&AttemptResult{Response: &http.Response{StatusCode: 200, Header: h, Body: http.NoBody}, Now: now})
	if !ok.RetryAt.IsZero() {
		t.Fatalf("success got RetryAt %v", ok.RetryAt)
	}
	busy := (DefaultClassifier{}).Classify(&AttemptResult{Response: &http.Response{StatusCode: 429, Header: h, Body: http.NoBody}, Now: now})
	if !busy.RetryAt.Equal(now.Add(30*time.Second)) || busy.Class != ClassCapacity {
		t.Fatalf("429 classified %+v; want capacity retrying at +30s", busy)
	}
}

func TestProblemDetailsArePeekedNotConsumed(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		body        string
		wantTitle   string
	}{
		{"problem json", "application/problem+json; charset=utf-8", `{"title":"Out of credit","type":"about:blank"}`, "Out of credit"},
		{"plain json", "application/json", `{"title":"x"}`, ""},
		{"invalid json", "application/problem+json", `{"title":`, ""},
		{"oversized", "application/problem+json", `{"title":"big","pad":"` + strings.Repeat("a", maxProblemBytes) + `"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: 422, Header: http.Header{"Content-Type": {tt.contentType}},
				Body: io.NopCloser(strings.NewReader(tt.body))}
			c := (DefaultClassifier{}).Classify(&AttemptResult{Response: resp})
			title := ""
			if c.Problem != nil {
				title = c.Problem.Title
			}
			if title != tt.wantTitle {
				t.Fatalf("problem title %q; want %q", title, tt.wantTitle)
			}
			b, _ := io.ReadAll(resp.Body)
			if string(b) != tt.body {
				t.Fatalf("body after peeking has %d bytes; want the %d original", len(b), len(tt.body))
			}
		})
	}
}

func FuzzClassifyResponse(f *testing.F) {
	f.Add(429, "Retry-After", "5", "application/problem+json", `{"title":"slow down"}`)
	f.Add(503, "Retry-After", "Wed, 02 Dec 2026 10:00:30 GMT", "text/plain", "busy")
	f.Add(400, "Content-Type", "x", "application/problem+json", `{"status":"nan"}`)
	f.Fuzz(func(t *testing.T, code int, hk, hv, ct, body string) {
		h := http.Header{}
		h.Set(hk, hv)
		h.Set("Content-Type", ct)
		resp := &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(body))}
		c := (DefaultClassifier{}).Classify(&AttemptResult{Response: resp, Now: time.Unix(0, 0)})
		if c.Class.String() == "unknown" {
			t.Fatalf("status %d got an unknown class", code)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != body {
			t.Fatalf("classifier changed the body")
		}
	})
}
