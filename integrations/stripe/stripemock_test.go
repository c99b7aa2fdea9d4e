package stripe_test

import (
	"bufio"
	"go/build"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrybudget/retrybudget/internal/testenv"
)

// stripeMockEnv makes a missing stripe-mock fail the tests that need it
// instead of skipping them; .ci/run sets it.
const stripeMockEnv = "RETRYBUDGET_REQUIRE_STRIPE_MOCK"

// stripeMockBinEnv names the stripe-mock binary to run; unset, it is
// looked up on PATH, then in GOBIN and GOPATH/bin, where
// `go install github.com/stripe/stripe-mock@v0.203.0` puts it.
const stripeMockBinEnv = "STRIPE_MOCK"

// stripeMockBinary returns the path of the stripe-mock binary, or skips
// (fails under RETRYBUDGET_REQUIRE_STRIPE_MOCK) when there is none.
func stripeMockBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(stripeMockBinEnv); p != "" {
		return p
	}
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p
	}
	dirs := []string{os.Getenv("GOBIN")}
	for _, gp := range filepath.SplitList(build.Default.GOPATH) {
		dirs = append(dirs, filepath.Join(gp, "bin"))
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if p := filepath.Join(d, "stripe-mock"); isExecutable(p) {
			return p
		}
	}
	testenv.Unavailable(t, stripeMockEnv, "stripe-mock not found (STRIPE_MOCK, PATH, GOBIN, GOPATH/bin): "+
		"go install github.com/stripe/stripe-mock@v0.203.0 to run the tests against Stripe's own mock server")
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// startStripeMock runs a private stripe-mock, which serves Stripe's API as
// its OpenAPI description says (each request validated against it, answered
// with its fixtures, nothing kept between requests), on free loopback
// ports, and returns its HTTP base URL. The process is killed by its pid at
// the test's cleanup.
func startStripeMock(t *testing.T) string {
	t.Helper()
	bin := stripeMockBinary(t)
	// An empty port makes stripe-mock choose a free one, which it prints.
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		testenv.Unavailable(t, stripeMockEnv, "stripe-mock does not start: "+err.Error())
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		wg.Wait()
	})
	addr := make(chan string, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(out)
		const prefix = "Listening for HTTP at address: "
		for sc.Scan() {
			if a, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), prefix); ok {
				addr <- a
			}
		}
	}()
	timer := time.NewTimer(60 * time.Second)
	defer timer.Stop()
	select {
	case a := <-addr:
		return "http://" + a
	case <-timer.C:
		t.Fatalf("stripe-mock (pid %d) printed no HTTP address within 60s", cmd.Process.Pid)
		return ""
	}
}

// arrivals counts the requests that leave the Transport for stripe-mock,
// stripe-mock keeping no count of its own, and keeps the Idempotency-Key
// and Stripe-Account each carried.
type arrivals struct {
	base http.RoundTripper
	mu   sync.Mutex // guards sent
	sent []sentRequest
}

// sentRequest is what arrivals keeps of one request.
type sentRequest struct {
	method, path, query, key, account string
}

func (a *arrivals) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.sent = append(a.sent, sentRequest{method: req.Method, path: req.URL.Path, query: req.URL.RawQuery,
		key: req.Header.Get("Idempotency-Key"), account: req.Header.Get("Stripe-Account")})
	a.mu.Unlock()
	return a.base.RoundTrip(req)
}

// since returns the requests sent after the first n.
func (a *arrivals) since(n int) []sentRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]sentRequest(nil), a.sent[n:]...)
}

// count returns how many requests were sent.
func (a *arrivals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sent)
}
