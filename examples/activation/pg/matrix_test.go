package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/retrybudget/retrybudget"
	"github.com/retrybudget/retrybudget/examples/activation/app"
	"github.com/retrybudget/retrybudget/idempotency"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/ledger/pgledger/pgtest"
)

// testFingerprintKey is the deployment's fingerprint key in these tests,
// the same on both instances.
const testFingerprintKey = "activation-pg-test-fingerprint-key"

// guardTimeout only turns a deadlock into a failure.
const guardTimeout = 10 * time.Second

// fleet is two instances of the service, A and B, on one PostgreSQL
// schema, each with its own pool (A's through a CutProxy), and one
// destination whose syncs are the effects, counted there.
type fleet struct {
	a, b    *httptest.Server
	proxy   *pgtest.CutProxy // between A and PostgreSQL
	dest    *httptest.Server
	direct  *pgxpool.Pool // a third client, for setups and counts
	store   ledger.Store  // on direct
	entered chan struct{}
	release chan struct{}
}

// newFleetOn returns a fleet in a fresh schema of the database at url.
func newFleetOn(t *testing.T, url string) *fleet {
	t.Helper()
	schema := pgtest.Schema(t, url)
	f := &fleet{entered: make(chan struct{}, 1), release: make(chan struct{})}
	d := app.NewDestination(func(ctx context.Context) {
		f.entered <- struct{}{}
		select {
		case <-f.release:
		case <-ctx.Done():
		}
	}, nil)
	f.dest = httptest.NewServer(d.Handler())
	t.Cleanup(f.dest.Close)

	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	f.proxy = pgtest.StartCutProxy(t, net.JoinHostPort(pcfg.ConnConfig.Host, strconv.Itoa(int(pcfg.ConnConfig.Port))))
	f.direct = pgtest.PoolVia(t, url, schema, "")
	cfg, err := config(t.Context(), f.direct, testFingerprintKey)
	if err != nil {
		t.Fatal(err)
	}
	f.store = cfg.Store
	f.a = f.instance(t, pgtest.PoolVia(t, url, schema, f.proxy.Addr().String()), "instance-a")
	f.b = f.instance(t, pgtest.PoolVia(t, url, schema, ""), "instance-b")
	return f
}

// instance serves the service on db as owner, as examples/activation/pg
// does.
func (f *fleet) instance(t *testing.T, db *pgxpool.Pool, owner string) *httptest.Server {
	t.Helper()
	cfg, err := config(t.Context(), db, testFingerprintKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Destination, cfg.Owner = f.dest.URL, owner
	srv := httptest.NewServer(app.New(cfg))
	t.Cleanup(srv.Close)
	return srv
}

// answer is one response, as a client sees it.
type answer struct {
	status   int
	body     string
	header   http.Header
	problem  string
	replayed bool
}

// call sends method path to srv as token's tenant, with key as
// Idempotency-Key when not empty.
func call(t *testing.T, srv *httptest.Server, method, path, token, key, body string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, body: string(b), header: resp.Header,
		replayed: resp.Header.Get(idempotency.HeaderReplayed) == "true"}
	if resp.Header.Get("Content-Type") == "application/problem+json" {
		var p retrybudget.Problem
		_ = json.Unmarshal(b, &p)
		a.problem = p.Type
	}
	return a
}

// activate posts an activation as tenant_a.
func activate(t *testing.T, srv *httptest.Server, key, body string) answer {
	t.Helper()
	return call(t, srv, http.MethodPost, "/api/v1/campaign-activations", "token_a", key, body)
}

// stats reads the destination's counts from outside, as an operator would.
func (f *fleet) stats(t *testing.T) app.Stats {
	t.Helper()
	resp, err := f.dest.Client().Get(f.dest.URL + "/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s app.Stats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// records reads the ledger's records of key from srv's admin endpoint.
func records(t *testing.T, srv *httptest.Server, key string) app.ActionView {
	t.Helper()
	a := call(t, srv, http.MethodGet, "/admin/tenants/tenant_a/actions/"+key, "token_ops", "", "")
	var v app.ActionView
	if err := json.Unmarshal([]byte(a.body), &v); err != nil || a.status != http.StatusOK {
		t.Fatalf("admin: %d %s: %v", a.status, a.body, err)
	}
	return v
}

// activationRows counts the activations in the database.
func (f *fleet) activationRows(t *testing.T) int {
	t.Helper()
	var n int
	if err := f.direct.QueryRow(t.Context(), "SELECT count(*) FROM activation_activations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// body is an activation request for campaign revision on audience.
func body(campaign string, revision int, audience string) string {
	return `{"campaign_id":"` + campaign + `","revision":` + strconv.Itoa(revision) + `,"audience_id":"` + audience + `"}`
}

const seedKey = "tenant_a:campaign_19:revision_4"

var seedBody = body("campaign_19", 4, "audience_28")

// wantStats fails t unless the destination counts got.
func wantStats(t *testing.T, got app.Stats, requests, syncs int) {
	t.Helper()
	if got.Requests != requests || got.Syncs != syncs {
		t.Errorf("destination %+v, want %d requests and %d syncs (effects)", got, requests, syncs)
	}
}
