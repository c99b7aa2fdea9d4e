package retrybudget

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// canned is a base RoundTripper without a network: it consumes the request
// body, as a transport must, and answers 200 at once. Through it, a test or
// a benchmark sees the Transport's own cost per call.
type canned struct{}

func (canned) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, ContentLength: 2, Body: io.NopCloser(strings.NewReader("ok")), Request: req,
	}, nil
}

// cannedCall returns a function that sends one successful GET, or one POST
// with a small JSON body (which gets a generated Idempotency-Key by
// default), through rt, and reads and closes the response. The request is
// built per call, since a POST's body is consumed: bare and the Transport
// pay the same for it.
func cannedCall(tb testing.TB, rt http.RoundTripper, method string) func() {
	return func() {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"amount":1999,"currency":"eur"}`)
		}
		req, _ := http.NewRequest(method, "http://api.example/v1/charges", body)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			tb.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkOwnCost sends a successful GET, and a keyed POST, through the
// Transport on a base without a network, and through that bare base: the
// difference between the two is the Transport's own cost per call.
func BenchmarkOwnCost(b *testing.B) {
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		for _, name := range []string{"bare", "retrybudget"} {
			var rt http.RoundTripper = canned{}
			if name == "retrybudget" {
				rt = New(Config{Base: canned{}})
			}
			b.Run(method+"/"+name, func(b *testing.B) {
				send := cannedCall(b, rt, method)
				b.ReportAllocs()
				for b.Loop() {
					send()
				}
			})
		}
	}
}

// TestSuccessPathAllocations pins the allocations the Transport adds to a
// successful call, over the bare base's, and the bytes they take, so that
// neither creeps back (on a small virtual machine the bytes cost as much as
// the count): one allocation for a GET (the call's state, which carries the
// Outcome on the response), and six for a POST with its generated key (the
// call with its first attempt, the request's own copy of the headers (two),
// and the three hooks that trace whether it was written; its key is one of a
// batch).
func TestSuccessPathAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector adds allocations of its own (crypto/rand, sync.Pool)")
	}
	for _, tc := range []struct {
		method        string
		allocs, bytes float64
	}{
		// A call fits the 384-byte size class.
		{http.MethodGet, 1, 384},
		// A traced call fits the 896-byte class, its malloc header
		// included; the header copy takes 400 bytes, the hooks 48, and a
		// key 37 and an eighth of an allocation (which AllocsPerRun
		// rounds down).
		{http.MethodPost, 6, 896 + 400 + 48 + 37},
	} {
		t.Run(tc.method, func(t *testing.T) {
			bareCall, ownCall := cannedCall(t, canned{}, tc.method), cannedCall(t, New(Config{Base: canned{}}), tc.method)
			bare, own := testing.AllocsPerRun(100, bareCall), testing.AllocsPerRun(100, ownCall)
			// The runtime allocates a few bytes of its own now and then.
			const slack = 16
			bareBytes, ownBytes := bytesPerRun(bareCall), bytesPerRun(ownCall)
			if own-bare > tc.allocs || ownBytes-bareBytes > tc.bytes+slack {
				t.Fatalf("the Transport adds %.0f allocations (%.0f bytes) to a %s over the bare base's %.0f (%.0f bytes); want at most %.0f (%.0f bytes)",
					own-bare, ownBytes-bareBytes, tc.method, bare, bareBytes, tc.allocs, tc.bytes)
			}
		})
	}
}

// bytesPerRun is testing.AllocsPerRun for the bytes allocated: the average
// over a whole number of key batches, after one run to warm up.
func bytesPerRun(f func()) float64 {
	const runs = 4 * keysPerBatch
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / runs
}
