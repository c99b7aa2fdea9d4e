package retrybudget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/retrybudget/retrybudget/ledger"
)

// Redirects of a request under an Action, followed by http.Client: each hop
// is a request of its own, under an action derived from the first one, so
// a job's second run replays every hop instead of sending it again.

// issueTracker is a fake provider that does not deduplicate: POST to
// /repos/old/issues is answered with a redirect to /repos/new/issues
// (/repos/older/issues with one to /repos/old/issues), and
// each POST there creates an issue (GitHub answers a renamed repository's
// URL with a 307 to the new one). A GET there lists the issues and changes
// nothing.
type issueTracker struct {
	mu      sync.Mutex // guards created, gets, keys
	created int
	gets    int
	keys    []string // the key header of each request, in order
	// redirect is the status of the answer at the old URL.
	redirect int
	// fail, when set, makes each creation answer 500 after creating the
	// issue: the provider applied it, the caller cannot tell.
	fail bool
}

func (it *issueTracker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	it.mu.Lock()
	defer it.mu.Unlock()
	it.keys = append(it.keys, r.Header.Get("Idempotency-Key"))
	switch {
	case r.URL.Path == "/repos/older/issues":
		http.Redirect(w, r, "/repos/old/issues", it.redirect)
	case r.URL.Path == "/repos/old/issues":
		http.Redirect(w, r, "/repos/new/issues", it.redirect)
	case r.URL.Path == "/repos/new/issues" && r.Method == http.MethodPost:
		it.created++
		if it.fail {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"number":1}`)
	case r.URL.Path == "/repos/new/issues" && r.Method == http.MethodGet:
		it.gets++
		io.WriteString(w, `[]`)
	default:
		http.NotFound(w, r)
	}
}

func (it *issueTracker) counts() (created, gets int) {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.created, it.gets
}

var openIssue = Action{Tenant: "acme", Operation: "open-issue", Key: "incident-7"}

// runJob is one run of a job that opens the issue through an http.Client
// over tr, as a worker does each time the job runs, at url's repository
// repo. It returns the final status, or the error of client.Do.
func runJob(t *testing.T, tr http.RoundTripper, url, repo string) (int, error) {
	t.Helper()
	client := &http.Client{Transport: tr}
	req, err := http.NewRequestWithContext(WithAction(context.Background(), openIssue), http.MethodPost,
		url+"/repos/"+repo+"/issues", strings.NewReader(`{"title":"disk full"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestRerunOfARedirectedActionReplaysEveryHop(t *testing.T) {
	for _, tc := range []struct {
		redirect int
		omitKey  bool
		// repo is where the job posts: "older" is two hops away.
		repo string
		// created is how many issues the two runs create, and status the
		// final answer of each: a 307 or 308 keeps the POST; http.Client
		// follows a 301, 302 or 303 to a POST with a GET, which creates
		// nothing.
		created, status int
	}{
		{http.StatusTemporaryRedirect, true, "old", 1, 201},
		{http.StatusPermanentRedirect, true, "old", 1, 201},
		{http.StatusTemporaryRedirect, false, "old", 1, 201},
		{http.StatusPermanentRedirect, false, "old", 1, 201},
		{http.StatusTemporaryRedirect, true, "older", 1, 201},
		{http.StatusMovedPermanently, true, "old", 0, 200},
		{http.StatusFound, true, "old", 0, 200},
		{http.StatusSeeOther, true, "old", 0, 200},
	} {
		t.Run(fmt.Sprintf("%d from %s omitKey=%v", tc.redirect, tc.repo, tc.omitKey), func(t *testing.T) {
			it := &issueTracker{redirect: tc.redirect}
			p := newProvider(t, it.ServeHTTP)
			tr := New(Config{OmitKey: tc.omitKey, Ledger: LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})}})
			for run := 1; run <= 2; run++ {
				code, err := runJob(t, tr, p.URL, tc.repo)
				if err != nil || code != tc.status {
					t.Fatalf("run %d: status %d, error %v; want %d", run, code, err, tc.status)
				}
			}
			if created, _ := it.counts(); created != tc.created {
				t.Fatalf("two runs of one action created %d issues; want %d", created, tc.created)
			}
		})
	}
}

func TestRerunDoesNotResendARedirectHopThatMayHaveBeenApplied(t *testing.T) {
	// The hop's answer is a 500 after the issue was created: a POST
	// without a key the provider honours may not be repeated, so the hop's
	// record stays uncertain, and the rerun, replaying the 307, must stop
	// at the hop instead of sending it again.
	it := &issueTracker{redirect: http.StatusTemporaryRedirect, fail: true}
	p := newProvider(t, it.ServeHTTP)
	tr := New(Config{OmitKey: true, MaxAttempts: 3, Ledger: LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})}})
	if code, err := runJob(t, tr, p.URL, "old"); err != nil || code != http.StatusInternalServerError {
		t.Fatalf("first run: status %d, error %v; want the 500", code, err)
	}
	_, err := runJob(t, tr, p.URL, "old")
	if !errors.Is(err, ErrUncertain) {
		t.Fatalf("second run: error %v; want ErrUncertain from the hop's record", err)
	}
	if created, _ := it.counts(); created != 1 {
		t.Fatalf("two runs created %d issues; want 1", created)
	}
}

func TestRedirectHopIsSentUnderAKeyOfItsOwn(t *testing.T) {
	// A provider that honours keys keeps the first request's key for the
	// first URL: the hop, a request of its own to another URL, carries the
	// derived action's key, the same on every run.
	it := &issueTracker{redirect: http.StatusTemporaryRedirect}
	p := newProvider(t, it.ServeHTTP)
	tr := New(Config{Ledger: LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{})}})
	if _, err := runJob(t, tr, p.URL, "old"); err != nil {
		t.Fatal(err)
	}
	it.mu.Lock()
	keys := append([]string(nil), it.keys...)
	it.mu.Unlock()
	hop := redirectAction(openIssue, 1).IdempotencyKey()
	if len(keys) != 2 || keys[0] != openIssue.IdempotencyKey() || keys[1] != hop || hop == keys[0] {
		t.Fatalf("keys sent %q; want the action's %q, then the hop's %q", keys, openIssue.IdempotencyKey(), hop)
	}
}

func TestRedirectHopKeepsHTTPClientRules(t *testing.T) {
	// http.Client, not the Transport, follows the redirect, so its rules
	// hold for a hop under an Action: credentials stay off another host,
	// and CheckRedirect decides whether a hop is sent at all.
	store := ledger.NewMemory(ledger.MemoryConfig{})
	tr := New(Config{OmitKey: true, Ledger: LedgerConfig{Store: store}})
	var mu sync.Mutex
	var auths []string
	created := 0
	other := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		created++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	})
	// Another host for http.Client: localhost, where the first is 127.0.0.1.
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	first := newProvider(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+"/repos/new/issues", http.StatusTemporaryRedirect)
	})
	post := func(client *http.Client, key string) (int, error) {
		a := openIssue
		a.Key = key
		req, _ := http.NewRequestWithContext(WithAction(context.Background(), a), http.MethodPost,
			first.URL+"/repos/old/issues", strings.NewReader(`{"title":"disk full"}`))
		req.Header.Set("Authorization", "Bearer ghp_secret")
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}

	for run := 1; run <= 2; run++ {
		if code, err := post(&http.Client{Transport: tr}, "cross-host"); err != nil || code != http.StatusCreated {
			t.Fatalf("run %d: status %d, error %v; want 201 from the other host", run, code, err)
		}
	}
	mu.Lock()
	gotAuths, gotCreated := append([]string(nil), auths...), created
	mu.Unlock()
	if gotCreated != 1 || len(gotAuths) != 1 || gotAuths[0] != "" {
		t.Fatalf("other host created %d, saw Authorization %q; want one creation without the credential", gotCreated, gotAuths)
	}

	stop := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for run := 1; run <= 2; run++ {
		if code, err := post(stop, "not-followed"); err != nil || code != http.StatusTemporaryRedirect {
			t.Fatalf("run %d: status %d, error %v; want the 307 itself", run, code, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if created != 1 {
		t.Fatalf("a redirect CheckRedirect refused was followed: %d creations; want still 1", created)
	}
}

func TestReconcilerOfARedirectHopIsAskedAboutTheAction(t *testing.T) {
	// A Reconciler that finds the effect by a mark of the action in the
	// request (as integrations/github finds an issue by its Marker) must
	// find the hop's effect too: the hop carries the first request's body,
	// so the Reconciler is asked about the action, not the hop's derived
	// one. Asked about the hop's, it finds nothing and the hop is sent
	// again.
	var mu sync.Mutex
	var bodies []string
	lose := true // the first creation's answer is lost
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/repos/old/issues" {
			http.Redirect(w, r, "/repos/new/issues", http.StatusTemporaryRedirect)
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		drop := lose
		lose = false
		mu.Unlock()
		if drop {
			lost(w, r)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(p.Close)
	var asked []Action
	reconcile := func(_ context.Context, rec ledger.Record) (ledger.Resolution, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, rec.Key)
		for _, b := range bodies {
			if strings.Contains(b, "mark:"+rec.Key.ID()) {
				return ledger.Resolution{State: ledger.StateCompleted, Outcome: ledger.Outcome{Status: http.StatusCreated}}, nil
			}
		}
		return ledger.Resolution{State: ledger.StateFailed, Reason: "no issue carries the mark"}, nil
	}
	tr := New(Config{OmitKey: true, Ledger: LedgerConfig{Store: ledger.NewMemory(ledger.MemoryConfig{}), Reconciler: reconcile}})
	run := func() (int, error) {
		req, _ := http.NewRequestWithContext(WithAction(context.Background(), openIssue), http.MethodPost,
			p.URL+"/repos/old/issues", strings.NewReader(`{"title":"disk full","body":"mark:`+openIssue.ID()+`"}`))
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if _, err := run(); !errors.Is(err, ErrUncertain) {
		t.Fatalf("first run: error %v; want ErrUncertain (the answer was lost)", err)
	}
	code, err := run()
	mu.Lock()
	defer mu.Unlock()
	if err != nil || code != http.StatusCreated || len(bodies) != 1 {
		t.Fatalf("second run: status %d, error %v, %d creations, Reconciler asked about %v; want the found issue replayed, 1 creation",
			code, err, len(bodies), asked)
	}
	if len(asked) != 1 || asked[0] != openIssue {
		t.Fatalf("Reconciler asked about %v; want the action %v", asked, openIssue)
	}
}

// A call whose action another worker took over while it sent (the same
// Owner under another instance: two live processes given one name) has its
// outcome refused. When that answer is a redirect, the call ends with
// ErrPending and http.Client follows nothing: the hop, sent on behalf of
// an action this call no longer owns, could apply it out of the new
// owner's sight while the new owner settles it as not applied.
func TestRedirectOfAnActionTakenOverIsNotFollowed(t *testing.T) {
	store := ledger.NewMemory(ledger.MemoryConfig{})
	act := Action{Tenant: "acme", Operation: "issue", Key: "job-1"}
	var mu sync.Mutex // guards hops
	hops := 0
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/repos/new/issues" {
			mu.Lock()
			hops++
			mu.Unlock()
			w.WriteHeader(http.StatusCreated)
			return
		}
		// While the first request is at the provider, another run under
		// the same Owner takes the action over.
		rec, err := store.Get(r.Context(), act)
		if err == nil {
			_, err = store.Reserve(r.Context(), ledger.ReserveRequest{Key: act, Fingerprint: rec.Fingerprint,
				Owner: "pod-1", Instance: "run-b", Reconciler: true})
		}
		if err != nil {
			t.Errorf("takeover: %v", err)
		}
		http.Redirect(w, r, "/repos/new/issues", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(p.Close)
	tr := New(Config{Ledger: LedgerConfig{Store: store, Owner: "pod-1", instance: "run-a"}})
	req, _ := http.NewRequestWithContext(WithAction(context.Background(), act), http.MethodPost,
		p.URL+"/repos/old/issues", strings.NewReader(`{"title":"disk full"}`))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err == nil {
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if !errors.Is(err, ErrPending) || !errors.Is(err, ledger.ErrNotOwner) || hops != 0 {
		t.Fatalf("error %v, %d hops sent; want ErrPending caused by ErrNotOwner and the redirect not followed", err, hops)
	}
	if step, o := Next(nil, err); step != StepRetry || !o.MaybeApplied {
		t.Fatalf("Next: %v, outcome %+v; want a retry, maybe applied (a POST answered with a redirect)", step, o)
	}
}
