package retrybudget

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/retrybudget/retrybudget/budget"
	"github.com/retrybudget/retrybudget/internal/redistest"
	"github.com/retrybudget/retrybudget/ledger"
	"github.com/retrybudget/retrybudget/limiter"
)

// fleetProvider is a provider fake that applies one charge per request it
// is sent and counts them by Idempotency-Key.
type fleetProvider struct {
	mu      sync.Mutex // guards charges
	charges map[string]int
}

func newFleetProvider(t *testing.T) (*fleetProvider, *httptest.Server) {
	p := &fleetProvider{charges: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.charges[r.Header.Get("Idempotency-Key")]++
		p.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ch_1"}`)
	}))
	t.Cleanup(srv.Close)
	return p, srv
}

func (p *fleetProvider) total() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.charges {
		n += c
	}
	return n
}

// fleetCharge sends one charge for order through rt and returns its
// Outcome and error.
func fleetCharge(t *testing.T, rt http.RoundTripper, url, order string) (Outcome, error) {
	t.Helper()
	ctx := WithAction(context.Background(), Action{Tenant: "acme", Operation: "charge", Key: order})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("amount=2000"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer shared-api-key")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: error %v is not a *Error", order, err)
		}
		return e.Outcome, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	o, ok := OutcomeOf(resp)
	if !ok {
		t.Fatalf("%s: response without an Outcome", order)
	}
	return o, nil
}

// fleetPrefixes gives each component of a fleet test its own keys in the
// test's Redis namespace, the same for every fleet of the test.
func fleetPrefixes(t *testing.T, rdb redis.UniversalClient, secrets ...[]byte) FleetConfig {
	p := redistest.Prefix(t)
	return FleetConfig{
		Redis:   rdb,
		Secrets: secrets,
		// One charge an hour: a second one anywhere in the fleet waits
		// past MaxWait and is refused, unless the limiter is not shared.
		Limits:    []limiter.Limit{{Rate: 1, Period: time.Hour, Burst: 1}},
		Ledger:    ledger.RedisConfig{Prefix: p + "ledger:"},
		Limiter:   limiter.RedisConfig{Prefix: p + "limiter:"},
		Budget:    budget.RedisConfig{Prefix: p + "budget:"},
		Transport: Config{MaxWait: 100 * time.Millisecond, KeysHonoured: true},
	}
}

func newTestFleet(t *testing.T, cfg FleetConfig, owner string) *Transport {
	t.Helper()
	cfg.Owner = owner
	f, err := NewFleet(cfg)
	if err != nil {
		t.Fatalf("NewFleet: %v", err)
	}
	if err := f.Prepare(context.Background()); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return f.Transport
}

// checkShared checks that b shares a's ledger and limiter: a sends
// order-1 (the hour's one charge), b's copy of order-1 is replayed from
// the ledger, and b's order-2 is refused by the limiter, so the provider
// sees one charge.
func checkShared(t *testing.T, a, b http.RoundTripper, p *fleetProvider, url string) {
	t.Helper()
	if o, err := fleetCharge(t, a, url, "order-1"); err != nil || o.Replayed || o.StatusCode != http.StatusCreated {
		t.Fatalf("first process, order-1: %+v, %v; want 201 sent", o, err)
	}
	if o, err := fleetCharge(t, b, url, "order-1"); err != nil || !o.Replayed {
		t.Errorf("second process, order-1 again: replayed %v, err %v; want the first's answer replayed from the shared ledger", o.Replayed, err)
	}
	if o, err := fleetCharge(t, b, url, "order-2"); !errors.Is(err, ErrRateLimited) && !errors.Is(err, ErrWaitTooLong) {
		t.Errorf("second process, order-2: %+v, %v; want refused by the shared limiter (the hour's charge is spent)", o.Reason, err)
	}
	if n := p.total(); n != 1 {
		t.Errorf("provider applied %d charges, want 1", n)
	}
}

// TestNewFleetFromOneSecretSharesLedgerAndLimiter: two processes built by
// NewFleet from the same secret share the ledger (a duplicate is replayed)
// and the limiter (the hour's one charge is the fleet's); a process built
// from another secret shares neither.
func TestNewFleetFromOneSecretSharesLedgerAndLimiter(t *testing.T) {
	rdb := redistest.Client(t)
	p, srv := newFleetProvider(t)
	secret := bytes.Repeat([]byte{7}, 32)
	cfg := fleetPrefixes(t, rdb, secret)
	a, b := newTestFleet(t, cfg, "worker-a"), newTestFleet(t, cfg, "worker-b")
	checkShared(t, a, b, p, srv.URL)

	other := cfg
	other.Secrets = [][]byte{bytes.Repeat([]byte{8}, 32)}
	c := newTestFleet(t, other, "worker-c")
	if o, err := fleetCharge(t, c, srv.URL, "order-3"); err != nil || o.StatusCode != http.StatusCreated {
		t.Errorf("another deployment's secret, order-3: %+v, %v; want sent (its limiter state is its own)", o.Reason, err)
	}
}

// TestNewFleetRotationReadsOldRecords: a process that puts a new secret in
// front of the old one replays what the old one recorded (its fingerprint
// was sealed under the old key) and shares the limiter with it, so a
// rolling deploy neither turns actions in flight into conflicts nor splits
// the limit.
func TestNewFleetRotationReadsOldRecords(t *testing.T) {
	rdb := redistest.Client(t)
	p, srv := newFleetProvider(t)
	old, next := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	cfg := fleetPrefixes(t, rdb, old)
	a := newTestFleet(t, cfg, "worker-a")
	rotated := cfg
	rotated.Secrets = [][]byte{next, old}
	b := newTestFleet(t, rotated, "worker-b")
	checkShared(t, a, b, p, srv.URL)
}

// TestNewFleetKeepsKeysSetByHand: a deployment that built its ledger and
// limiter with keys of its own keeps them under NewFleet (the fields set
// by hand win over the derived keys), so the processes it starts share
// state with those it has not yet replaced.
func TestNewFleetKeepsKeysSetByHand(t *testing.T) {
	rdb := redistest.Client(t)
	p, srv := newFleetProvider(t)
	fingerprintKey := []byte("hand-set-fingerprint-key-32bytes")
	boundaryKey := []byte("hand-set-boundary-key-32-bytes!!")
	cfg := fleetPrefixes(t, rdb, bytes.Repeat([]byte{3}, 32))

	// The process built by hand, as before NewFleet.
	cfg.Ledger.FingerprintKeys = ledger.FingerprintKeys{fingerprintKey}
	store, err := ledger.NewRedis(rdb, cfg.Ledger)
	if err != nil {
		t.Fatal(err)
	}
	lc := cfg.Limiter
	lc.Limits, lc.BoundaryKey, lc.Queue = cfg.Limits, boundaryKey, &limiter.FairQueue{}
	lim, err := limiter.NewRedis(rdb, lc)
	if err != nil {
		t.Fatal(err)
	}
	handCfg := cfg.Transport
	handCfg.Ledger.Store, handCfg.Limiter, handCfg.Boundary = store, lim, limiter.ByCredential()
	a := New(handCfg)

	cfg.Limiter.BoundaryKey = boundaryKey
	b := newTestFleet(t, cfg, "worker-b")
	checkShared(t, a, b, p, srv.URL)
}

// TestNewFleetConfigErrorsNameTheField: each config error wraps
// ErrInvalidConfig (and the component's sentinel) and names the field to
// set and what a good value looks like.
func TestNewFleetConfigErrorsNameTheField(t *testing.T) {
	rdb := redistest.Client(t)
	good := bytes.Repeat([]byte{9}, 32)
	for _, tt := range []struct {
		name  string
		cfg   FleetConfig
		is    error
		words []string
	}{
		{"no client", FleetConfig{Secrets: [][]byte{good}}, ErrInvalidConfig, []string{"FleetConfig.Redis", "redis.NewClient"}},
		{"no secret", FleetConfig{Redis: rdb}, ErrInvalidConfig, []string{"FleetConfig.Secrets", "32 random bytes", "RETRYBUDGET_SECRET"}},
		{"short old secret", FleetConfig{Redis: rdb, Secrets: [][]byte{good, []byte("short")}}, ErrInvalidConfig, []string{"FleetConfig.Secrets[1] is 5 bytes", "32 random bytes"}},
		{"ledger prefix", FleetConfig{Redis: rdb, Secrets: [][]byte{good}, Ledger: ledger.RedisConfig{Prefix: "a{b"}}, ledger.ErrInvalidConfig, []string{"FleetConfig.Ledger"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewFleet(tt.cfg)
			if !errors.Is(err, tt.is) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("NewFleet: %v; want an error wrapping %v and ErrInvalidConfig", err, tt.is)
			}
			for _, w := range tt.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("NewFleet: %q does not say %q", err, w)
				}
			}
		})
	}
	// Every key set by hand: no secret is needed.
	cfg := FleetConfig{Redis: rdb,
		Ledger:  ledger.RedisConfig{Config: ledger.Config{FingerprintKeys: ledger.FingerprintKeys{good}}},
		Limiter: limiter.RedisConfig{BoundaryKey: good},
		Budget:  budget.RedisConfig{DestinationKey: good},
	}
	if _, err := NewFleet(cfg); err != nil {
		t.Errorf("NewFleet with every key set by hand and no secret: %v", err)
	}
}

// TestFleetKeysAreOnePerUse: the keys derived from one secret differ from
// each other and from the secret, each old secret gives its own
// fingerprint key, and the limiter's and budget's come from the oldest.
func TestFleetKeysAreOnePerUse(t *testing.T) {
	newest, oldest := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	ks, err := fleetKeys(FleetConfig{Secrets: [][]byte{newest, oldest}})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := fleetKeys(FleetConfig{Secrets: [][]byte{oldest}})
	if err != nil {
		t.Fatal(err)
	}
	all := [][]byte{newest, oldest, ks.fingerprint[0], ks.fingerprint[1], ks.boundary, ks.destination}
	for i := range all {
		for j := range i {
			if bytes.Equal(all[i], all[j]) {
				t.Errorf("keys %d and %d are equal", i, j)
			}
		}
	}
	if !bytes.Equal(ks.fingerprint[1], alone.fingerprint[0]) || !bytes.Equal(ks.boundary, alone.boundary) || !bytes.Equal(ks.destination, alone.destination) {
		t.Error("the old secret's keys changed when a new secret was put in front of it")
	}
}
