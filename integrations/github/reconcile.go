package github

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/retrybudget/retrybudget/integrations"
	"github.com/retrybudget/retrybudget/ledger"
)

// Marker returns the text a worker appends to the body of an issue it
// creates under action k, so that NewReconciler can find the issue:
// an HTML comment (GitHub does not render it) holding an HMAC-SHA256 of the
// action's ID under key. The action's tenant, operation and key cannot be
// read back from it, nor guessed and tested without key.
func Marker(key []byte, k ledger.Key) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(k.ID()))
	return "<!-- retrybudget:" + hex.EncodeToString(m.Sum(nil)[:16]) + " -->"
}

// ReconcilerConfig configures NewReconciler. Client, MarkerKey and Repo are
// required.
type ReconcilerConfig struct {
	// Client reads the repository's issues (NewClient; GETs change
	// nothing).
	Client *github.Client
	// MarkerKey is the secret the worker's Marker calls use, at least 16
	// bytes, the same in every process.
	MarkerKey []byte
	// Repo names the repository an action creates its issue in.
	Repo func(ctx context.Context, k ledger.Key) (owner, repo string, err error)
	// Settle is how long after a send GitHub may still create the issue
	// (see integrations.LookupReconciler). Zero means ledger.DefaultLease.
	Settle time.Duration
	// MaxScan bounds the issues one lookup reads, newest first. Zero means
	// 300. A lookup that reaches it without passing the action's creation
	// cannot tell, and leaves the action uncertain.
	MaxScan int
	// Skew is how far GitHub's clock and the store's may differ. Zero
	// means one minute.
	Skew time.Duration
}

// ErrReconcilerConfig is the error NewReconciler returns for a config that
// lacks a required field.
var ErrReconcilerConfig = errors.New("github: invalid reconciler config")

// NewReconciler returns a ledger.Reconciler for issues created through
// GitHub's REST API, which honours no idempotency key: it lists the
// repository's issues created since the action's record (less Skew),
// newest first, and matches the action's Marker in their bodies. One match
// completes the action with that issue as its answer (a replay returns it,
// as the 201 would have); none fails it, so it is sent again, only after
// the settle time; several, or a scan that cannot reach back to the
// action, leave it uncertain for an operator
// (integrations.LookupReconciler).
func NewReconciler(cfg ReconcilerConfig) (ledger.Reconciler, error) {
	return newReconciler(cfg, time.Now)
}

// newReconciler is NewReconciler reading the settle time's clock from now.
func newReconciler(cfg ReconcilerConfig, now func() time.Time) (ledger.Reconciler, error) {
	switch {
	case cfg.Client == nil:
		return nil, fmt.Errorf("%w: Client is required (rbgithub.NewClient with a token that can read the repository's issues)", ErrReconcilerConfig)
	case len(cfg.MarkerKey) < 16:
		return nil, fmt.Errorf("%w: MarkerKey is %d bytes: set it to the secret the worker's Marker calls use, at least 16 random bytes", ErrReconcilerConfig, len(cfg.MarkerKey))
	case cfg.Repo == nil:
		return nil, fmt.Errorf("%w: Repo is required: a function that names the repository an action creates its issue in", ErrReconcilerConfig)
	}
	if cfg.MaxScan <= 0 {
		cfg.MaxScan = 300
	}
	if cfg.Skew <= 0 {
		cfg.Skew = time.Minute
	}
	find := func(ctx context.Context, r ledger.Record) ([]ledger.Outcome, error) {
		owner, repo, err := cfg.Repo(ctx, r.Key)
		if err != nil {
			return nil, err
		}
		marker := Marker(cfg.MarkerKey, r.Key)
		since := r.CreatedAt.Add(-cfg.Skew)
		opt := &github.IssueListByRepoOptions{State: "all", Sort: "created", Direction: "desc", Since: since,
			ListOptions: github.ListOptions{PerPage: min(cfg.MaxScan, 100)}}
		var found []ledger.Outcome
		for scanned := 0; ; {
			issues, resp, err := cfg.Client.Issues.ListByRepo(ctx, owner, repo, opt)
			if err != nil {
				return nil, err
			}
			for _, is := range issues {
				scanned++
				if is.GetCreatedAt().Before(since) {
					return found, nil // sorted by creation: the rest is older
				}
				if !strings.Contains(is.GetBody(), marker) {
					continue
				}
				body, err := json.Marshal(is)
				if err != nil {
					return nil, err
				}
				found = append(found, ledger.Outcome{Status: http.StatusCreated, Body: body,
					Header: map[string][]string{"Content-Type": {"application/json; charset=utf-8"}}})
			}
			if resp.NextPage == 0 {
				return found, nil
			}
			if scanned >= cfg.MaxScan {
				return nil, fmt.Errorf("github: more than %d issues since the action began; raise MaxScan", cfg.MaxScan)
			}
			opt.ListOptions.Page = resp.NextPage
		}
	}
	return integrations.LookupReconciler(find, cfg.Settle, now), nil
}
