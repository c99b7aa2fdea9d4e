package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
)

func TestStoredOutcomeHeaders(t *testing.T) {
	h := http.Header{
		"Content-Type":  {"application/json"},
		"Request-Id":    {"req_1"},
		"Set-Cookie":    {"session=secret"},
		"Authorization": {"Bearer secret"},
		"Cookie":        {"a=b"},
		"X-Custom":      {"1"},
	}
	tests := []struct {
		name  string
		names []string
		want  http.Header
	}{
		{"defaults", nil, http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_1"}}},
		{"configured, credentials still dropped", []string{"x-custom", "set-cookie", "Authorization", "COOKIE", "Proxy-Authorization"},
			http.Header{"X-Custom": {"1"}}},
		{"empty keeps none", []string{}, http.Header{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Config{Headers: tc.names}.storedOutcome(Outcome{Status: 201, Header: h})
			if !equalHeader(got.Header, tc.want) {
				t.Errorf("Header = %v, want %v", got.Header, tc.want)
			}
		})
	}
}

func equalHeader(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, vs := range a {
		if len(b[k]) != len(vs) {
			return false
		}
		for i := range vs {
			if b[k][i] != vs[i] {
				return false
			}
		}
	}
	return true
}

func TestStoredOutcomeBody(t *testing.T) {
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	atCap := bytes.Repeat([]byte("x"), DefaultMaxBody)
	overCap := append(bytes.Clone(atCap), 'y')
	tests := []struct {
		name    string
		max     int
		in      Outcome
		keep    bool
		wantLen int64
		hash    string
	}{
		{"empty", 0, Outcome{}, true, 0, sum(nil)},
		{"at default cap", 0, Outcome{Body: atCap}, true, DefaultMaxBody, sum(atCap)},
		{"over default cap", 0, Outcome{Body: overCap}, false, DefaultMaxBody + 1, sum(overCap)},
		{"small cap", 3, Outcome{Body: []byte("abcd")}, false, 4, sum([]byte("abcd"))},
		{"hash only", -1, Outcome{Body: []byte("a")}, false, 1, sum([]byte("a"))},
		{"caller omitted", 0, Outcome{BodyOmitted: true, BodyHash: "h", BodyLen: 1 << 30, Body: []byte("ignored")}, false, 1 << 30, "h"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Config{MaxBody: tc.max}.storedOutcome(tc.in)
			if got.BodyOmitted == tc.keep {
				t.Errorf("BodyOmitted = %t", got.BodyOmitted)
			}
			if tc.keep && !bytes.Equal(got.Body, tc.in.Body) || !tc.keep && got.Body != nil {
				t.Errorf("Body has %d bytes", len(got.Body))
			}
			if got.BodyLen != tc.wantLen || got.BodyHash != tc.hash {
				t.Errorf("BodyLen, BodyHash = %d, %s; want %d, %s", got.BodyLen, got.BodyHash, tc.wantLen, tc.hash)
			}
		})
	}
}
