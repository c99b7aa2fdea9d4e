package github_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/retrybudget/retrybudget"
	rbgithub "github.com/retrybudget/retrybudget/integrations/github"
	"github.com/retrybudget/retrybudget/integrations/internal/sdktest"
	"github.com/retrybudget/retrybudget/internal/fakeclock"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/presets"
)

// tracker is a fake of GitHub's issues API as GitHub documents it: POST
// /repos/{owner}/{repo}/issues creates an issue and answers 201; GET lists
// the repository's issues updated since `since`, sorted by creation,
// newest first. lose makes it create the next issue and cut the
// connection instead of answering; drop cuts it before creating anything.
type tracker struct {
	// mu guards everything below.
	mu         sync.Mutex
	issues     []*github.Issue
	lose, drop bool
}

func (tk *tracker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/repos/o/r/issues" {
		http.NotFound(w, r)
		return
	}
	tk.mu.Lock()
	defer tk.mu.Unlock()
	if r.Method == http.MethodGet {
		since, _ := time.Parse(time.RFC3339, r.URL.Query().Get("since"))
		var page []*github.Issue
		for i := len(tk.issues) - 1; i >= 0; i-- {
			if is := tk.issues[i]; !is.GetUpdatedAt().Before(since) {
				page = append(page, is)
			}
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		json.NewEncoder(w).Encode(page)
		return
	}
	if tk.drop {
		tk.drop = false
		sdktest.Cut(w)
		return
	}
	var req github.IssueRequest
	json.NewDecoder(r.Body).Decode(&req)
	n := len(tk.issues) + 1
	now := github.Timestamp{Time: time.Now().UTC().Truncate(time.Second)}
	is := &github.Issue{Number: github.Ptr(n), Title: req.Title, Body: req.Body, State: github.Ptr("open"), CreatedAt: &now, UpdatedAt: &now}
	tk.issues = append(tk.issues, is)
	if tk.lose {
		tk.lose = false
		sdktest.Cut(w)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(is)
}

func (tk *tracker) count() int {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	return len(tk.issues)
}

var markerKey = []byte("reconcile-test-marker-key-32-bytes")

// TestGitHubReconcilerFindsIssuesByMarker: an issue whose answer was lost
// is held (StepHold); the reconciler finds it by the Marker in its body,
// not by its title (another issue with the same title, and one with
// another action's marker, do not match), and completes the action, so the
// next run replays it. An issue cut before GitHub got it is left uncertain
// inside the settle time and failed after, so the next run creates it,
// once.
func TestGitHubReconcilerFindsIssuesByMarker(t *testing.T) {
	tk := &tracker{}
	srv := httptest.NewServer(tk)
	defer srv.Close()
	clock := fakeclock.New(time.Now())
	// The store and the reconciler wait out the same settle time.
	const settle = 20 * time.Second
	store := ledger.NewMemory(ledger.MemoryConfig{Now: clock.Now})
	tr := retrybudget.New(retrybudget.Config{Routes: sdktest.SettledRoutes([]retrybudget.Route{presets.GitHub()}, srv.URL, settle),
		Ledger: retrybudget.LedgerConfig{Store: store}})
	client, err := rbgithub.NewClient("ghp_test", srv.URL, tr)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rbgithub.NewReconcilerAt(rbgithub.ReconcilerConfig{
		Client: client, MarkerKey: markerKey, Settle: settle,
		Repo: func(context.Context, ledger.Key) (string, string, error) { return "o", "r", nil },
	}, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	create := func(t *testing.T, order string) retrybudget.Step {
		t.Helper()
		a := retrybudget.Action{Tenant: "acme", Operation: "issue", Key: order}
		ctx, cancel := context.WithTimeout(retrybudget.WithAction(context.Background(), a), 5*time.Second)
		defer cancel()
		_, _, err := client.Issues.Create(ctx, "o", "r", &github.IssueRequest{
			Title: github.Ptr("Refund failed"), Body: github.Ptr("Order " + order + " needs a look.\n\n" + rbgithub.Marker(markerKey, a)),
		})
		if err == nil {
			return retrybudget.StepDone
		}
		step, _ := retrybudget.Next(nil, err)
		return step
	}
	// Decoys: the same title without a marker, and another order's issue.
	if step := create(t, "decoy"); step != retrybudget.StepDone {
		t.Fatalf("decoy: step %v", step)
	}
	sdktest.HeldSends{
		Store: store, Reconciler: rc, Tenant: "acme", Operation: "issue", Send: create,
		Lose:    func() { tk.mu.Lock(); tk.lose = true; tk.mu.Unlock() },
		Drop:    func() { tk.mu.Lock(); tk.drop = true; tk.mu.Unlock() },
		Effects: tk.count, Settle: settle, Advance: clock.Advance,
	}.Run(t, "1001", "1002", 1)
}

func TestMarkerIsKeyedAndOpaque(t *testing.T) {
	k := ledger.Key{Tenant: "acme", Operation: "issue", Key: "order-1"}
	m := rbgithub.Marker(markerKey, k)
	if m == rbgithub.Marker([]byte("another-deployment-secret-key"), k) {
		t.Fatal("Marker does not depend on its key")
	}
	for _, s := range []string{k.Tenant, k.Key, k.ID()[:12], k.IdempotencyKey()} {
		if strings.Contains(m, s) {
			t.Fatalf("Marker %q shows %q", m, s)
		}
	}
}
