package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"testing"
)

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestFingerprintCanonicalForm recomputes one fingerprint from the
// documented canonical form by hand, so a change to the form (which would
// turn every stored action into a conflict after an upgrade) fails here.
func TestFingerprintCanonicalForm(t *testing.T) {
	body := []byte(`{"amount":100}`)
	bodySum := sha256.Sum256(body)
	canonical := "21:ledger-fingerprint-v1\n" +
		"4:POST\n" +
		"11:/v1/charges\n" +
		"7:a=2&b=1\n" +
		"15:idempotency-key\n" + "1:1\n" + "3:k-1\n" +
		"9:x-missing\n" + "1:0\n" +
		"64:" + hex.EncodeToString(bodySum[:]) + "\n"
	want := sha256.Sum256([]byte(canonical))

	h := http.Header{}
	h.Set("Idempotency-Key", "k-1")
	h.Set("Authorization", "Bearer sk_live_secret")
	got := Fingerprint("post", mustURL(t, "https://api.example/v1/charges?b=1&a=2"), h,
		[]string{"X-Missing", "Idempotency-Key", "authorization", "idempotency-key"}, body)
	if got != hex.EncodeToString(want[:]) {
		t.Fatalf("Fingerprint = %s, want %s", got, hex.EncodeToString(want[:]))
	}
}

func TestFingerprint(t *testing.T) {
	type req struct {
		method string
		url    string
		header http.Header
		names  []string
		body   string
	}
	base := req{"POST", "https://a.example/v1/pay?x=1&y=2", http.Header{"Idempotency-Key": {"k"}}, []string{"Idempotency-Key"}, "body"}
	with := func(f func(*req)) req { r := base; f(&r); return r }
	tests := []struct {
		name string
		a, b req
		same bool
	}{
		{"identical", base, base, true},
		{"method case", base, with(func(r *req) { r.method = "post" }), true},
		{"query order", base, with(func(r *req) { r.url = "https://a.example/v1/pay?y=2&x=1" }), true},
		{"host and scheme do not count", base, with(func(r *req) { r.url = "http://b.example/v1/pay?x=1&y=2" }), true},
		{"fragment does not count", base, with(func(r *req) { r.url = "https://a.example/v1/pay?x=1&y=2#f" }), true},
		{"header name case", base, with(func(r *req) { r.names = []string{"IDEMPOTENCY-KEY", "idempotency-key"} }), true},
		{"unnamed header does not count", base, with(func(r *req) { r.header = http.Header{"Idempotency-Key": {"k"}, "X-Trace": {"1"}} }), true},
		{"authorization never counts", with(func(r *req) {
			r.header = http.Header{"Idempotency-Key": {"k"}, "Authorization": {"old"}, "Cookie": {"a=1"}}
			r.names = []string{"Idempotency-Key", "Authorization", "Cookie", "Proxy-Authorization"}
		}), with(func(r *req) {
			r.header = http.Header{"Idempotency-Key": {"k"}, "Authorization": {"rotated"}, "Proxy-Authorization": {"p"}}
			r.names = []string{"Idempotency-Key", "Authorization", "Cookie", "Proxy-Authorization"}
		}), true},
		{"method", base, with(func(r *req) { r.method = "PUT" }), false},
		{"path", base, with(func(r *req) { r.url = "https://a.example/v1/pay2?x=1&y=2" }), false},
		{"escaped slash", with(func(r *req) { r.url = "https://a.example/a%2Fb" }), with(func(r *req) { r.url = "https://a.example/a/b" }), false},
		{"query value", base, with(func(r *req) { r.url = "https://a.example/v1/pay?x=1&y=3" }), false},
		{"repeated query value order", with(func(r *req) { r.url = "/p?a=1&a=2" }), with(func(r *req) { r.url = "/p?a=2&a=1" }), false},
		{"bad query used raw", with(func(r *req) { r.url = "/p?a=%zz" }), with(func(r *req) { r.url = "/p?a=%zy" }), false},
		{"named header value", base, with(func(r *req) { r.header = http.Header{"Idempotency-Key": {"k2"}} }), false},
		{"named header absent", base, with(func(r *req) { r.header = http.Header{} }), false},
		{"header values cannot be spliced", with(func(r *req) { r.header = http.Header{"Idempotency-Key": {"a", "b"}} }),
			with(func(r *req) { r.header = http.Header{"Idempotency-Key": {"a\n1:b"}} }), false},
		{"body", base, with(func(r *req) { r.body = "body2" }), false},
		{"empty path is slash", with(func(r *req) { r.url = "https://a.example" }), with(func(r *req) { r.url = "https://a.example/" }), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fa := Fingerprint(tc.a.method, mustURL(t, tc.a.url), tc.a.header, tc.a.names, []byte(tc.a.body))
			fb := Fingerprint(tc.b.method, mustURL(t, tc.b.url), tc.b.header, tc.b.names, []byte(tc.b.body))
			if (fa == fb) != tc.same {
				t.Errorf("same = %t, want %t", fa == fb, tc.same)
			}
		})
	}
	if Fingerprint("GET", nil, nil, nil, nil) != Fingerprint("GET", mustURL(t, "/"), http.Header{}, nil, []byte{}) {
		t.Error("nil URL, header and body differ from /, empty header and empty body")
	}
}

var hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)

func FuzzFingerprint(f *testing.F) {
	f.Add("POST", "https://a.example/v1/x?b=1&a=2", "Idempotency-Key", "k", []byte("{}"))
	f.Add("get", "/%zz?%", "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, method, rawURL, name, value string, body []byte) {
		u, err := url.Parse(rawURL)
		if err != nil {
			u = nil
		}
		h := http.Header{}
		h.Add(name, value)
		fp := Fingerprint(method, u, h, []string{name}, body)
		if !hexSHA256.MatchString(fp) {
			t.Fatalf("fingerprint %q is not hex SHA-256", fp)
		}
		// The documented normalisations must hold for any input.
		if again := Fingerprint(method, u, h, []string{name, name}, body); again != fp {
			t.Fatal("a repeated header name changed the fingerprint")
		}
		if up := Fingerprint(method+"", u, h.Clone(), []string{name}, append([]byte(nil), body...)); up != fp {
			t.Fatal("fingerprint is not deterministic")
		}
	})
}

// BenchmarkFingerprint prices the fingerprint of a typical keyed POST: a
// form body, a query, and one named header.
func BenchmarkFingerprint(b *testing.B) {
	u, err := url.Parse("https://api.example.com/v1/charges?expand=customer")
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	body := []byte("amount=1999&currency=usd&source=tok_visa&description=order+1234")
	names := []string{"Content-Type"}
	b.ReportAllocs()
	for b.Loop() {
		Fingerprint(http.MethodPost, u, h, names, body)
	}
}
